import { sql, type Kysely, type RawBuilder } from 'kysely';
import type pg from 'pg';
import { storableCopy } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { queryPrepared } from './prepared.ts';

/**
 * How a device push of a job ended (push_outcomes.outcome). Every device push a job addressed
 * ends in exactly one of these, or is still in flight:
 * - delivered: the provider accepted it;
 * - invalid: its token is dead (the provider said so, or it was invalidated while queued);
 * - failed: the provider refused it for good (parked with code provider-rejected);
 * - parked: Herald stopped trying (code: retries-exhausted, delivery-limit, app-disabled, ...);
 * - expired: its expiry passed before it could be sent (demuxer, descheduler or pusher);
 * - cancelled: its job was cancelled (DELETE /v1/jobs/:id) before it was sent: removed while
 *   scheduled, refused by the store or the demuxer (recordCancelledPushes), or dropped by a pusher;
 * - opted-out / muted: its user's preferences: the demuxer skipped the device, a descheduler found
 *   them changed when the push fell due, or a pusher when the push had waited;
 * - replayed: not an end: a parked or failed push an operator replayed, in flight again until its
 *   new outcome replaces the row (replayed-outcomes.ts).
 */
export type PushOutcomeKind = 'delivered' | 'invalid' | 'failed' | 'parked' | 'expired' | 'cancelled' | 'opted-out' | 'muted' | 'replayed';

export interface PushOutcomeEntry {
  pushId: string;
  jobId: string;
  outcome: PushOutcomeKind;
  /** The park code, or the provider's reason for a dead token. */
  code?: string;
  /** A sentence: why it was parked or refused, the provider's answer. */
  reason?: string;
  /** apns-id / FCM message name of a delivered push. */
  providerMessageId?: string;
  platform?: string;
  deviceId?: string;
}

/** One device push of a job as GET /v1/jobs/:id/pushes lists it. */
export interface PushRecord {
  pushId: string;
  /** A PushOutcomeKind, or `scheduled` for a push still waiting for its due time. */
  outcome: string;
  code: string | null;
  reason: string | null;
  providerMessageId: string | null;
  platform: string | null;
  deviceId: string | null;
  /** The device's token (the caller masks it); null when the device is unknown. */
  token: string | null;
  /** When a scheduled push is due. */
  dueAt: Date | null;
  updatedAt: Date;
}

const TEXT_MAX = 1000;
/** At most TEXT_MAX characters, and storable whatever a provider said (storableCopy). */
const clip = (s: string | undefined): string | null =>
  s === undefined ? null : storableCopy(s.length > TEXT_MAX ? `${s.slice(0, TEXT_MAX - 1)}…` : s);

/**
 * Upsert outcomes keyed by (job id, push id) (one statement, in push_id order): a redelivered push
 * overwrites its outcome rather than counting twice, and a delivered push stays delivered (a later
 * duplicate copy parked or expired does not undo a delivery). With `pool` (the pool under `db`, not
 * inside a transaction) it runs as a prepared statement (prepared.ts): pushers write one a batch.
 */
export async function upsertOutcomes(db: Kysely<HeraldTables>, entries: readonly PushOutcomeEntry[], pool?: pg.Pool): Promise<void> {
  if (entries.length === 0) return;
  await queryPrepared(db, pool, upsertOutcomesStatement(entries));
}

/** upsertOutcomes' statement, for a caller that writes it with another in one (delivery-ledger.ts). */
export function upsertOutcomesStatement(entries: readonly PushOutcomeEntry[]): RawBuilder<unknown> {
  return insertOutcomes(
    entries,
    sql`do update set outcome = excluded.outcome, code = excluded.code, reason = excluded.reason,
      provider_message_id = excluded.provider_message_id, platform = coalesce(excluded.platform, push_outcomes.platform),
      device_id = coalesce(excluded.device_id, push_outcomes.device_id), updated_at = now()
      where push_outcomes.outcome <> 'delivered'`,
  );
}

/**
 * The outcomes of pushes that have none yet; a push with one keeps it. `only`: a condition on the
 * entry `i` (its push_id) that each must meet to be written.
 */
export function insertOutcomesStatement(entries: readonly PushOutcomeEntry[], only?: RawBuilder<boolean>): RawBuilder<unknown> {
  return insertOutcomes(entries, sql`do nothing`, only);
}

function insertOutcomes(entries: readonly PushOutcomeEntry[], onConflict: RawBuilder<unknown>, only?: RawBuilder<boolean>): RawBuilder<unknown> {
  const rows = [...new Map(entries.map((e) => [e.pushId.toLowerCase(), e])).values()];
  return sql`
    insert into push_outcomes (push_id, job_id, outcome, code, reason, provider_message_id, platform, device_id)
    select * from unnest(
      ${rows.map((r) => r.pushId)}::uuid[], ${rows.map((r) => r.jobId)}::text[], ${rows.map((r) => r.outcome)}::text[],
      ${rows.map((r) => clip(r.code))}::text[], ${rows.map((r) => clip(r.reason))}::text[], ${rows.map((r) => clip(r.providerMessageId))}::text[],
      ${rows.map((r) => r.platform ?? null)}::text[], ${rows.map((r) => r.deviceId ?? null)}::text[])
      as i(push_id, job_id, outcome, code, reason, provider_message_id, platform, device_id)
    ${only === undefined ? sql`` : sql`where ${only}`}
    order by push_id
    on conflict (job_id, push_id) ${onConflict}`;
}

/** A push of a cancelled job that was never published nor stored. */
export interface CancelledPush {
  pushId: string;
  jobId: string;
  deviceId: string;
  platform?: string;
}

/** The reason recorded for a push its job's cancel kept from being published or stored. */
export const CANCELLED_BEFORE_SENT = 'the job was cancelled before this push was sent';

/**
 * Record pushes of a cancelled job as `cancelled` (code `cancelled`), one statement in push_id
 * order. A push that already has an outcome keeps it (`do nothing`): it was decided before the
 * cancel (a redelivered job's first pass, or the cancel's own removal of its stored pushes).
 */
export async function recordCancelledPushes(db: Kysely<HeraldTables>, pushes: readonly CancelledPush[]): Promise<void> {
  if (pushes.length === 0) return;
  await sql`
    insert into push_outcomes (push_id, job_id, outcome, code, reason, platform, device_id)
    select p, j, 'cancelled', 'cancelled', ${CANCELLED_BEFORE_SENT}, pl, d
    from unnest(${pushes.map((p) => p.pushId)}::uuid[], ${pushes.map((p) => p.jobId)}::text[], ${pushes.map((p) => p.platform ?? null)}::text[],
      ${pushes.map((p) => p.deviceId)}::text[]) as i(p, j, pl, d)
    order by p
    on conflict (job_id, push_id) do nothing`.execute(db);
}

/**
 * A page of a job's device pushes in push_id order (keyset: the ones after `after`): those with an
 * outcome and those still scheduled; pushes on their way to a provider have neither yet.
 */
export async function listJobPushes(
  db: Kysely<HeraldTables>,
  jobId: string,
  page: { limit: number; after?: string },
): Promise<PushRecord[]> {
  const after = page.after ?? null;
  const { rows } = await sql<{
    push_id: string;
    outcome: string;
    code: string | null;
    reason: string | null;
    provider_message_id: string | null;
    platform: string | null;
    device_id: string | null;
    token: string | null;
    due_at: Date | null;
    updated_at: Date;
  }>`
    select p.*, d.token from (
      select o.push_id, o.outcome, o.code, o.reason, o.provider_message_id, o.platform, o.device_id, null::timestamptz as due_at, o.updated_at
      from push_outcomes o
      where o.job_id = ${jobId} and (${after}::uuid is null or o.push_id > ${after}::uuid)
      union all
      select s.push_id, 'scheduled', null, null, null, s.platform, s.payload->>'deviceId', s.due_at, s.created_at
      from scheduled_pushes s
      where s.job_id = ${jobId} and (${after}::uuid is null or s.push_id > ${after}::uuid)
        and not exists (select 1 from push_outcomes o where o.job_id = s.job_id and o.push_id = s.push_id)
      order by push_id
      limit ${page.limit}
    ) p
    left join lateral (
      select token from devices where id = case when p.device_id ~ '^[0-9]{1,18}$' then p.device_id::bigint end
    ) d on true
    order by p.push_id`.execute(db);
  return rows.map((r) => ({
    pushId: r.push_id,
    outcome: r.outcome,
    code: r.code,
    reason: r.reason,
    providerMessageId: r.provider_message_id,
    platform: r.platform,
    deviceId: r.device_id,
    token: r.token,
    dueAt: r.due_at,
    updatedAt: r.updated_at,
  }));
}
