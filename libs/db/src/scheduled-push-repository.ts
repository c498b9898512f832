import { sql, type Kysely, type RawBuilder } from 'kysely';
import { Platforms, type DevicePush, type Platform } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { scheduleChannel } from './schedule-channel.ts';
import { listenForSchedules, type ScheduleListener, type ScheduleListenerOptions } from './schedule-listener.ts';
import { CANCELLED_BEFORE_SENT, upsertOutcomes, type PushOutcomeEntry } from './push-outcomes.ts';
import { cancelledOrSkippedSql, leftAudienceSql, type SkipReason } from './device-targets.ts';

export interface ScheduledPushInput {
  dueAt: Date;
  push: DevicePush;
  /** The job's opt-out category and muted object: the user's preferences are asked again when it falls due. */
  category?: string;
  objectId?: string;
}

/** A stored push as a descheduler releases it: the push itself stays the JSON text it was stored as. */
export interface DueRow {
  dueAt: Date;
  pushId: string;
  jobId: string;
  /** The push's expiresAt, if it has one. */
  expiresAt: Date | undefined;
  /** The push asked for trace logging. */
  trace: boolean;
  /** The DevicePush, JSON-encoded exactly as it was scheduled: published without re-encoding. */
  payload: string;
}

/** What a release decided besides publishing: outcomes to record in the claim's transaction (e.g. expired pushes). */
export interface ReleaseResult {
  outcomes?: readonly PushOutcomeEntry[];
}

export interface OverdueCount {
  platform: Platform;
  /** At most the cap asked for. */
  count: number;
  earliestDueAt: Date;
}

export interface HourCount {
  platform: Platform;
  /** Start of the hour, UTC. */
  hour: Date;
  count: number;
}

/** Pushes held until their due time; see infra/db/migrations/0005_scheduled_pushes.sql and 0010. */
export interface ScheduledPushRepository {
  /** Store pushes (a push already stored is left as it is) and wake the deschedulers; returns rows added. */
  schedule(pushes: readonly ScheduledPushInput[]): Promise<number>;
  /**
   * In one transaction: claim and delete up to `limit` rows of `platform` due at `now` (earliest
   * first, skipping rows other deschedulers hold), run `release`, record the outcomes it returns,
   * then commit. If `release` throws, the transaction rolls back and the rows stay in the store.
   * Rows of a cancelled job, or whose user opted out or muted since they were stored, are deleted
   * unreleased and recorded in job status; `committed` is told how many of each once the batch
   * committed. Returns the row count.
   */
  withDueBatch(
    platform: Platform,
    now: Date,
    limit: number,
    release: (rows: DueRow[]) => Promise<ReleaseResult | void>,
    committed?: (skipped: SkippedCounts) => void,
  ): Promise<number>;
  /** Due time of the earliest row no other descheduler holds, or undefined when there is none. */
  nextDueAt(platform: Platform): Promise<Date | undefined>;
  /** Remove every stored push of a job, recording each as cancelled for the job's status; returns how many were removed. */
  cancelJob(jobId: string): Promise<number>;
  /** Stored pushes per platform per hour (UTC) from now (overdue ones count in the first hour). */
  countsByHour(platform: Platform | undefined, hours: number, now?: Date): Promise<HourCount[]>;
  /**
   * Per platform, the stored pushes due before `before` (counted up to `cap`) and the earliest due
   * time among them: pushes no descheduler released (none running, or one stuck).
   */
  overdue(before: Date, cap?: number): Promise<OverdueCount[]>;
  /** Be told (with the earliest due time) whenever pushes are scheduled for `platform`. */
  listen(platform: Platform, onSchedule: (earliestDueAt: Date) => void): Promise<ScheduleListener>;
}

const INSERT_CHUNK = 5_000;

export function createScheduledPushRepository(
  db: Kysely<HeraldTables>,
  options: Omit<ScheduleListenerOptions, 'channel'>,
): ScheduledPushRepository {
  const channel = (platform: Platform) => scheduleChannel(options.schema, platform);
  return {
    schedule: async (pushes) => {
      let added = 0;
      for (let i = 0; i < pushes.length; i += INSERT_CHUNK) added += await insertChunk(db, pushes.slice(i, i + INSERT_CHUNK), channel);
      return added;
    },
    withDueBatch: (platform, now, limit, release, committed) => withDueBatch(db, platform, now, limit, release, committed),
    nextDueAt: async (platform) => {
      // The weakest lock that still skips rows a release batch is deleting: a stronger one made a
      // cancel (or the demuxer's removal of a dead device's pushes) that met it skip the row, left
      // stored, its job reading "cancelling", until it fell due.
      const { rows } = await sql<{ due_at: Date }>`
        select due_at from scheduled_pushes where platform = ${platform}
        order by due_at limit 1 for key share skip locked`.execute(db);
      return rows[0]?.due_at;
    },
    cancelJob: async (jobId) => {
      // One statement: the pushes leave the store and enter the job's outcomes together. Rows a
      // descheduler's release batch holds are skipped, not waited for (its publish can wait long on
      // a blocked broker): the job is marked cancelled first, so the pushers drop those, and a
      // batch that fails puts them back where the next claim drops them (withDueBatch). A row
      // nextDueAt is reading (key share) is not skipped: the delete waits out that statement.
      return removeStoredPushes(
        db,
        sql`push_id in (select push_id from scheduled_pushes where job_id = ${jobId} for no key update skip locked)`,
        { outcome: 'cancelled', code: null, reason: 'cancelled while scheduled (DELETE /v1/jobs/:id)' },
      );
    },
    countsByHour: (platform, hours, now = new Date()) => countsByHour(db, platform, hours, now),
    overdue: (before, cap = 100_000) => overdue(db, before, cap),
    listen: (platform, onSchedule) => listenForSchedules({ ...options, channel: channel(platform) }, onSchedule),
  };
}

/**
 * One statement inserts the chunk; one NOTIFY per platform, delivered when it commits. The chunk's
 * jobs rows are share-locked first (in id order, like every statement on jobs), and a cancelled
 * job's pushes are recorded `cancelled` instead of stored: a cancel committed before this statement
 * is seen (a locking read sees the row's latest version), and one that comes later waits for this
 * transaction, so its removal of the job's stored pushes (cancelJob) finds these. Without the lock,
 * pushes stored by a demuxer that read the job before its cancel would be committed after the
 * cancel's removal, and wait as `scheduled` until their due time. A push whose job has no row yet
 * is stored.
 *
 * Each job's last_due_at is raised to its chunk's latest due time first (raiseLastDue).
 */
async function insertChunk(db: Kysely<HeraldTables>, chunk: readonly ScheduledPushInput[], channel: (p: Platform) => string): Promise<number> {
  if (chunk.length === 0) return 0;
  const jobIds = [...new Set(chunk.map((p) => p.push.jobId))].sort();
  await raiseLastDue(db, chunk);
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ platform: Platform; earliest: Date; added: string }>`
      -- Materialized, and filtered only where it is read: a condition on cancelled_at inside it
      -- would be checked before the lock, and leave the rows it drops unlocked.
      with locked as materialized (
        select id, cancelled_at is not null as cancelled from jobs where id = any(${jobIds}::text[]) order by id for share
      ), input as materialized (
        select * from unnest(
          ${chunk.map((p) => p.push.platform)}::text[], ${chunk.map((p) => p.dueAt.toISOString())}::timestamptz[],
          ${chunk.map((p) => p.push.jobId)}::text[], ${chunk.map((p) => p.push.pushId)}::uuid[],
          ${chunk.map((p) => p.push.expiresAt ?? null)}::timestamptz[], ${chunk.map((p) => p.push.trace === true)}::boolean[],
          ${chunk.map((p) => JSON.stringify(p.push))}::json[],
          ${chunk.map((p) => p.category ?? null)}::text[], ${chunk.map((p) => p.objectId ?? null)}::text[])
          as i(platform, due_at, job_id, push_id, expires_at, trace, payload, category, object_id)
      ), added as (
        insert into scheduled_pushes (platform, due_at, job_id, push_id, expires_at, trace, payload, category, object_id)
        select * from input where job_id not in (select id from locked where cancelled)
        -- Stored in due order: pushes released together then share heap pages, so a release
        -- batch dirties (and writes a full-page image of) fewer pages.
        order by due_at
        on conflict (push_id) do nothing
        returning platform, due_at
      ), refused as (
        insert into push_outcomes (push_id, job_id, outcome, code, reason, platform, device_id)
        select push_id, job_id, 'cancelled', 'cancelled', ${CANCELLED_BEFORE_SENT}, platform, payload->>'deviceId'
        from input where job_id in (select id from locked where cancelled)
        order by push_id
        on conflict (job_id, push_id) do nothing
      )
      select platform, min(due_at) as earliest, count(*) as added from added group by platform`.execute(trx);
    for (const r of rows) {
      await sql`select pg_notify(${channel(r.platform)}, ${String(r.earliest.getTime())})`.execute(trx);
    }
    return rows.reduce((sum, r) => sum + Number(r.added), 0);
  });
}

/**
 * Raise each job's last_due_at (migration 0032) to the latest due time of its pushes in `chunk`: its
 * status is kept JOB_RETENTION_DAYS from then (job-prune.ts), not from its acceptance, so a job
 * scheduled further ahead than that keeps its status, and stays cancellable, while its pushes are
 * sent. A statement of its own, committed before the pushes are stored: a crash between the two
 * keeps a job longer, never shorter; and the store's share locks are not upgraded (two stores of
 * one job's chunks would deadlock). Rows locked in id order, like every statement on jobs; a job
 * whose time is already as late is neither locked nor written.
 */
async function raiseLastDue(db: Kysely<HeraldTables>, chunk: readonly ScheduledPushInput[]): Promise<void> {
  const latest = new Map<string, number>();
  for (const p of chunk) latest.set(p.push.jobId, Math.max(latest.get(p.push.jobId) ?? -Infinity, p.dueAt.getTime()));
  const jobs = [...latest];
  await sql`
    with due as (
      select * from unnest(${jobs.map(([id]) => id)}::text[], ${jobs.map(([, ms]) => new Date(ms).toISOString())}::timestamptz[]) as i(id, due_at)
    ), target as (
      select j.id, due.due_at from jobs j join due on due.id = j.id
      where j.last_due_at is null or j.last_due_at < due.due_at
      order by j.id for no key update of j
    )
    update jobs j set last_due_at = greatest(j.last_due_at, target.due_at) from target where j.id = target.id`.execute(db);
}

async function withDueBatch(
  db: Kysely<HeraldTables>,
  platform: Platform,
  now: Date,
  limit: number,
  release: (rows: DueRow[]) => Promise<ReleaseResult | void>,
  committed?: (skipped: SkippedCounts) => void,
): Promise<number> {
  const skipped: SkippedCounts = {};
  const claimedCount = await db.transaction().execute(async (trx) => {
    // Claim and delete in one statement: the rows are locked (SKIP LOCKED keeps other
    // deschedulers off them) and deleted by their physical address, without a second index
    // probe. The delete only counts once the transaction commits, after `release`. The payload
    // comes back as text (json::text is the stored text), so nothing parses it here.
    // Times come back as epoch ms (float8): parsing a timestamptz text per row cost more.
    // A row of a cancelled job (stored after its cancel by a chunk or demux already past its check)
    // is deleted unreleased and recorded as cancelled, in the same transaction; so is one whose user
    // opted out of its category, or muted its object, since it was stored (asked again now, as the
    // demuxer asked when it stored it).
    // A push of a topic or follower job is asked whether its user is still in the audience: the
    // batch's jobs are read once (a few a batch), and only their pushes are asked.
    const { rows: claimed } = await sql<{ due_ms: number; push_id: string; job_id: string; expires_ms: number | null; trace: boolean; payload: string; skip: Skip | null }>`
      with taken as (
        delete from scheduled_pushes where ctid = any(array(
          select ctid from scheduled_pushes
          where platform = ${platform} and due_at <= ${now.toISOString()}::timestamptz
          order by due_at limit ${limit} for update skip locked))
        returning due_at, push_id, job_id, expires_at, trace, payload, ${cancelledOrSkippedSql(storedPreferences, now)} as skip
      ), audiences as (
        select f.job_id, f.app, f.audience->>'topic' as topic, f.audience->>'followersOf' as followee
        from fanouts f
        where f.job_id in (select job_id from taken) and (f.audience ? 'topic' or f.audience ? 'followersOf')
      )
      select (extract(epoch from t.due_at) * 1000)::float8 as due_ms, t.push_id, t.job_id,
        (extract(epoch from t.expires_at) * 1000)::float8 as expires_ms, t.trace, t.payload::text as payload,
        coalesce(t.skip, case when a.job_id is not null then ${leftAudienceSql({ app: sql.ref('a.app'), topic: sql.ref('a.topic'), followee: sql.ref('a.followee'), userId: holderOf(sql.ref('t.payload')), deviceKey: sql`(t.payload->>'platform') || ':' || (t.payload->>'token')` })} end) as skip
      from taken t left join audiences a on a.job_id = t.job_id`.execute(trx);
    if (claimed.length === 0) return 0;
    for (const r of claimed) if (r.skip !== null) skipped[r.skip] = (skipped[r.skip] ?? 0) + 1;
    const rows = claimed.filter((r) => r.skip === null);
    await upsertOutcomes(trx, claimed.flatMap((r) => (r.skip === null ? [] : [skippedOutcome(platform, r, r.skip)])));
    if (rows.length === 0) return claimed.length;
    rows.sort((a, b) => a.due_ms - b.due_ms);
    const released = await release(
      rows.map((r) => ({
        dueAt: new Date(r.due_ms),
        pushId: r.push_id,
        jobId: r.job_id,
        expiresAt: r.expires_ms === null ? undefined : new Date(r.expires_ms),
        trace: r.trace,
        payload: r.payload,
      })),
    );
    if (released) await upsertOutcomes(trx, released.outcomes ?? []);
    return claimed.length;
  });
  if (claimedCount > 0) committed?.(skipped);
  return claimedCount;
}

/**
 * The user a stored push (its `payload`) is asked of. The user of a push addressed to a device (a
 * broadcast, segment or topic device member: toDevice) is whoever holds the device now, as the
 * fan-out asked it of the holder then: a tablet handed to another user overnight gets the morning's
 * push under the new holder's choices (the pusher's claim asks the holder too, of a push that
 * waited). Without one, the user it was stored for.
 */
const holderOf = (payload: RawBuilder<unknown>) => sql`coalesce(
    case when ${payload}->>'toDevice' = 'true' and ${payload}->>'deviceId' ~ '^[0-9]{1,18}$' then
      (select d.user_id from devices d where d.id = (${payload}->>'deviceId')::bigint) end,
    ${payload}->>'userId')`;

/** The stored row's user, app, category and object, qualified: opt_outs and mutes have columns of those names. */
const storedPreferences = {
  userId: holderOf(sql.ref('scheduled_pushes.payload')),
  app: sql`scheduled_pushes.payload->>'app'`,
  category: sql.ref('scheduled_pushes.category'),
  objectId: sql.ref('scheduled_pushes.object_id'),
  jobId: sql.ref('scheduled_pushes.job_id'),
};

type Skip = 'cancelled' | SkipReason | 'left-audience';

/** Rows a batch deleted unreleased, by why: their job was cancelled, or their user opted out or muted since they were stored. */
export type SkippedCounts = Partial<Record<Skip, number>>;

const SKIPPED_WHY: Record<Skip, string> = {
  cancelled: 'cancelled while scheduled (DELETE /v1/jobs/:id)',
  'opted-out': "its user opted out of the job's category while it was scheduled",
  muted: "its user muted the job's object while it was scheduled",
  'left-audience': "its user left the job's audience while it was scheduled (unsubscribed from its topic, or unfollowed)",
};

function skippedOutcome(platform: Platform, r: { push_id: string; job_id: string; payload: string }, skip: Skip): PushOutcomeEntry {
  const deviceId = (JSON.parse(r.payload) as { deviceId?: unknown }).deviceId;
  return {
    pushId: r.push_id,
    jobId: r.job_id,
    // Leaving a topic or a followee is opting out of its pushes: counted with the opt-outs, its reason says which.
    outcome: skip === 'left-audience' ? 'opted-out' : skip,
    ...(skip === 'left-audience' && { code: skip }),
    reason: SKIPPED_WHY[skip],
    platform,
    ...(typeof deviceId === 'string' && { deviceId }),
  };
}

async function countsByHour(db: Kysely<HeraldTables>, platform: Platform | undefined, hours: number, now: Date): Promise<HourCount[]> {
  const first = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000);
  const end = new Date(first.getTime() + hours * 3_600_000);
  const { rows } = await sql<{ platform: Platform; hour: Date; count: string }>`
    select platform, greatest(date_bin('1 hour', due_at, ${first.toISOString()}::timestamptz), ${first.toISOString()}::timestamptz) as hour,
      count(*) as count
    from scheduled_pushes
    where due_at < ${end.toISOString()}::timestamptz ${platform === undefined ? sql`` : sql`and platform = ${platform}`}
    group by 1, 2 order by 2, 1`.execute(db);
  return rows.map((r) => ({ platform: r.platform, hour: r.hour, count: Number(r.count) }));
}

/** Each platform's overdue rows by the (platform, due_at) index: the earliest, and a count that stops at `cap`. */
async function overdue(db: Kysely<HeraldTables>, before: Date, cap: number): Promise<OverdueCount[]> {
  const { rows } = await sql<{ platform: Platform; earliest: Date; count: string }>`
    select p.platform, e.earliest,
      (select count(*) from (select 1 from scheduled_pushes s where s.platform = p.platform and s.due_at < ${before.toISOString()}::timestamptz limit ${cap}) c) as count
    from unnest(${[...Platforms]}::text[]) as p(platform)
    cross join lateral (select min(due_at) as earliest from scheduled_pushes s where s.platform = p.platform and s.due_at < ${before.toISOString()}::timestamptz) e
    where e.earliest is not null`.execute(db);
  return rows.map((r) => ({ platform: r.platform, earliestDueAt: r.earliest, count: Number(r.count) }));
}

/**
 * Deletes the stored pushes `where` picks and records each one's outcome with its job, in one
 * statement (a delivery recorded meanwhile stays delivered), so its job's counts still add up;
 * how many it deleted. A job's cancel and a user's erasure take their stored pushes out so.
 */
export async function removeStoredPushes(
  db: Kysely<HeraldTables>,
  where: RawBuilder<unknown>,
  o: { outcome: 'cancelled' | 'invalid'; code: string | null; reason: string },
): Promise<number> {
  const { rows } = await sql<{ removed: string }>`
    with gone as (
      delete from scheduled_pushes where ${where}
      returning push_id, job_id, platform, payload->>'deviceId' as device_id
    ), recorded as (
      insert into push_outcomes (push_id, job_id, outcome, code, reason, platform, device_id)
      select push_id, job_id, ${o.outcome}, ${o.code}::text, ${o.reason}, platform, device_id from gone order by push_id
      on conflict (job_id, push_id) do update set outcome = excluded.outcome, code = excluded.code, reason = excluded.reason, provider_message_id = null, updated_at = now()
        where push_outcomes.outcome <> 'delivered'
    )
    select count(*) as removed from gone`.execute(db);
  return Number(rows[0]?.removed ?? 0);
}
