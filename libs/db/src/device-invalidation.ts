import { sql, type Kysely } from 'kysely';
import { storableCopy, type Platform } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { deviceKey, pickOnePerDevice } from './device-key.ts';

export interface InvalidationInput {
  app: string;
  platform: Platform;
  token: string;
  reason: string;
  /** The provider's "invalid since" (APNs 410 timestamp); a later registration keeps the token. */
  invalidSince?: Date;
  observedAt: Date;
}

/** 'invalidated' also when the device was already invalidated (idempotent redelivery). */
export type InvalidationResult = 'invalidated' | 'stale' | 'unknown';

/**
 * Mark devices dead, in one statement. The device's invalidated_at becomes invalidSince (or
 * observedAt), so a register event from before it, delivered late, cannot resurrect the token.
 * If the device registered after that time, the token is alive again and the result is 'stale'.
 * An already-invalidated device keeps its first reason, and its invalidation time moves on to a
 * later one the provider gives (a logout, then a provider's 410 for a push sent before it: a
 * register event stamped between the two, delivered late, must not resurrect the token).
 */
export async function invalidateDevices(
  db: Kysely<HeraldTables>,
  invs: readonly InvalidationInput[],
): Promise<InvalidationResult[]> {
  if (invs.length === 0) return [];
  // Per device, the provider's latest statement counts.
  const since = (inv: InvalidationInput) => (inv.invalidSince ?? inv.observedAt).getTime();
  const winners = pickOnePerDevice(invs, (a, b) => since(a) > since(b)).map((i) => invs[i] as InvalidationInput);
  const rows = await invalidateStatement(db, winners);
  const byKey = new Map(rows.map((r) => [deviceKey(r), r.result]));
  return invs.map((inv) => byKey.get(deviceKey(inv)) ?? 'unknown');
}

type InvalidationRow = { app: string; platform: string; token: string; result: InvalidationResult };

async function invalidateStatement(db: Kysely<HeraldTables>, winners: readonly InvalidationInput[]): Promise<InvalidationRow[]> {
  const { rows } = await sql<InvalidationRow>`
    with input as (
      select * from unnest(
        ${winners.map((v) => v.app)}::text[], ${winners.map((v) => v.platform)}::text[],
        ${winners.map((v) => v.token)}::text[], ${winners.map((v) => storableCopy(v.reason))}::text[],
        ${winners.map((v) => v.invalidSince?.toISOString() ?? null)}::timestamptz[],
        ${winners.map((v) => v.observedAt.toISOString())}::timestamptz[]
      ) as i(app, platform, token, reason, invalid_since, observed_at)
    ), locked as (
      -- Lock the devices first, in the order the registrar's upsert takes them (app, platform,
      -- token), so neither concurrent invalidation batches nor a registrar batch can deadlock with
      -- this one (by id, an order the registrar does not share, they could: 40P01, a retried batch).
      select d.id, d.app, d.platform, d.token, d.registered_at, d.invalidated_at
      from devices d join input i on (d.app, d.platform, d.token) = (i.app, i.platform, i.token)
      order by d.app, d.platform, d.token
      for update of d
    ), decided as (
      -- Never later than the database's now: registrations are capped so too (a pusher's clock running
      -- ahead would otherwise make the app's next registration of a good token stale).
      select l.id, i.app, i.platform, i.token, i.reason, least(coalesce(i.invalid_since, i.observed_at), now()) as dead_since,
        case when l.id is null then 'unknown'
             when l.invalidated_at is not null and least(coalesce(i.invalid_since, i.observed_at), now()) > l.invalidated_at then 'later'
             when l.invalidated_at is not null then 'invalidated'
             -- Without the provider's invalid-since (FCM UNREGISTERED, APNs BadDeviceToken, Web Push 404/410) the time
             -- the pusher observed it stands in, as it does for invalidated_at: a registration after it keeps the
             -- token whichever of the two is processed first.
             when l.registered_at > coalesce(i.invalid_since, i.observed_at) then 'stale'
             else 'invalidate' end as action
      from input i left join locked l on (l.app, l.platform, l.token) = (i.app, i.platform, i.token)
    ), updated as (
      update devices d
      set invalidated_at = x.dead_since, invalidation_reason = case when x.action = 'later' then d.invalidation_reason else x.reason end, updated_at = now()
      from decided x
      where d.id = x.id and x.action in ('invalidate', 'later')
    )
    select app, platform, token, case when action in ('invalidate', 'later') then 'invalidated' else action end as result
    from decided`.execute(db);
  return rows;
}
