import { sql, type Kysely, type RawBuilder } from 'kysely';
import type pg from 'pg';
import { isUuidText, storableCopy } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { queryPrepared } from './prepared.ts';
import { upsertOutcomesStatement, type PushOutcomeEntry } from './push-outcomes.ts';
import { pruneLedger, pruneLedgerExclusively } from './ledger-prune.ts';
import { liveReplacementSql } from './device-replacement.ts';
import { cancelledOrSkippedSql, webFieldsOf, type SkipReason, type TargetDevice } from './device-targets.ts';

/**
 * 'claimed': the caller may send now. 'done': already sent, ack without sending.
 * 'in-flight': another holder's lease is still live; retry later.
 */
export type ClaimResult = 'claimed' | 'done' | 'in-flight';

/** A device push to claim, with its device (claimLive): the id of its devices row, the token it was sent to and the user it is for. */
export interface LedgerPush {
  pushId: string;
  deviceId: string;
  token: string;
  userId: string;
  /** Addressed to the device, not its user (DevicePush.toDevice): no 'reassigned' check. */
  toDevice?: boolean;
  /**
   * A push that waited: ask again whether its job was cancelled ('cancelled': the pushers' own list
   * of cancelled jobs goes back LEDGER_RETENTION_HOURS only, a parked push may be replayed later)
   * and, given its category, its user's opt-outs and mutes for this app, category and object
   * ('opted-out', 'muted'). The user of a push addressed to the device is whoever holds it now.
   */
  recheck?: { jobId: string; app: string; category?: string; objectId?: string };
}

/**
 * A push to mark done. `status`: its job-status outcome (push_outcomes), written in the same
 * statement, so the job status counts a push the ledger knows delivered, and one write does both.
 */
export interface LedgerCompletion {
  pushId: string;
  outcome: string;
  status?: PushOutcomeEntry;
}

/**
 * claimLive's answer: a ClaimResult, or (not claimed) 'dead': its device was invalidated or
 * unregistered since the push was queued, 'gone': its device row was deleted since (pruned once
 * dead, or its app deleted), or 'reassigned': the device is registered to another
 * user now (a shared tablet, a phone handed on), whom this push is not for, or (asked with
 * LedgerPush.recheck) 'cancelled': its job was cancelled, or 'opted-out' or 'muted': its user opted
 * out of its category, or muted its object, in its app or every app, or 'moved': its token was
 * replaced (a register naming it as its previousToken, migration 0045) by a token that is live now
 * (LiveClaims.moves): claim it again for that device.
 */
export type LiveClaimResult = ClaimResult | 'dead' | 'gone' | 'reassigned' | 'cancelled' | 'moved' | SkipReason;

/** Where a push whose token was replaced goes (LiveClaims.moves): the live device its token's chain of replacements ends at. */
export interface MovedTo {
  deviceId: string;
  token: string;
}

/** A web push's subscription as its device row holds it now: its keys (p256dh, auth), and the VAPID key it was made with. */
export type CurrentSubscription = Pick<TargetDevice, 'webKeys' | 'webVapidKey'>;

/**
 * claimLive's answer: each push's state; and, asked with `webSubscriptions`, the subscription the
 * device of each web push it claimed holds now (by lowercase push id; none for a device row
 * without keys, or a deviceId that is no devices id). A browser that subscribes again at the same
 * endpoint gets new keys on the same row (the registrar's upsert): a push queued before, encrypted
 * to the keys it was queued with, is accepted by the push service (201) and dropped by the browser,
 * which cannot decrypt it.
 */
export interface LiveClaims extends Map<string, LiveClaimResult> {
  readonly subscriptions?: ReadonlyMap<string, CurrentSubscription>;
  /** Each 'moved' push's new device, by lowercase push id. */
  readonly moves?: ReadonlyMap<string, MovedTo>;
}

/**
 * The delivery ledger keyed by pushId: a redelivered push that was already sent is acked without
 * sending, and two copies of one push in flight at once are not both sent.
 */
export interface DeliveryLedger {
  /** Claim many pushIds in one statement (and one read of the state of those already in the ledger, if any); a 'sending' claim older than leaseMs is taken over. */
  claim(pushIds: readonly string[], owner: string, leaseMs: number): Promise<Map<string, ClaimResult>>;
  /**
   * claim() for device pushes, in the same statement leaving out those whose device is dead, gone or
   * another user's now, and those given a recheck whose job was cancelled or whose user opted out
   * or muted since (LiveClaimResult): a pusher's batch makes one round trip to the database before
   * it sends, not two. `webSubscriptions` (web pushes): it also reads the subscription each claimed
   * push's device holds now (LiveClaims), by the same primary key.
   */
  claimLive(pushes: readonly LedgerPush[], owner: string, leaseMs: number, options?: { webSubscriptions?: boolean }): Promise<LiveClaims>;
  /** Mark pushes done with their outcome (e.g. 'delivered', 'invalid-token'), and record the job-status outcomes given with them; one statement. */
  complete(entries: readonly LedgerCompletion[]): Promise<void>;
  /** Which of `pushIds` the ledger holds as done (sent, or settled for good), lowercase; ids that are not UUIDs are none of them. */
  doneOf(pushIds: readonly string[]): Promise<Set<string>>;
  /** Drop this owner's 'sending' claims (the send failed and will be retried). */
  release(pushIds: readonly string[], owner: string): Promise<void>;
  /**
   * Restart the lease of this owner's 'sending' claims (a batch still at work: waiting for budget,
   * for a slow answer or for its outcome to be recorded), so no other pusher takes them over while
   * their owner lives. Returns how many claims were still this owner's.
   */
  renew(pushIds: readonly string[], owner: string): Promise<number>;
  /**
   * Delete entries finished (or abandoned while 'sending') before `olderThan`, in bounded batches.
   * `olderThan` must lie beyond the redelivery horizon; see ledger-prune.ts and ADR 0002.
   */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
  /**
   * prune(), but only if no other process is pruning this schema's ledger (advisory lock);
   * undefined when another holds the lock. Stops between batches once `signal` is aborted.
   */
  pruneExclusively(olderThan: Date, batchSize?: number, signal?: AbortSignal): Promise<number | undefined>;
}

/**
 * `pool`: the pool under `db`. With it, claim, claimLive and complete (once per batch each, in every
 * pusher) run as prepared statements (prepared.ts): at moderate rates a batch holds a few pushes,
 * and planning each statement again cost PostgreSQL as much as running it. A prepared statement
 * keeps the plan it was first given, so none of them reads the ledger by a join whose plan depends
 * on its size: a plan made while the ledger was empty (a new schema) scanned the whole table for
 * every batch until the next ANALYZE. Each writes the ledger by an insert whose conflicts the
 * primary key finds; claimLive also joins devices by its primary key, and for pushes given a
 * recheck reads jobs, opt_outs and mutes by theirs (claimLiveStatement).
 */
export function createDeliveryLedger(db: Kysely<HeraldTables>, pool?: pg.Pool, timeoutMs?: number): DeliveryLedger {
  const run = <R>(query: RawBuilder<R>): Promise<R[]> => queryPrepared(db, pool, query, timeoutMs);
  return {
    prune: (olderThan, batchSize) => pruneLedger(db, olderThan, batchSize),
    pruneExclusively: (olderThan, batchSize, signal) => pruneLedgerExclusively(db, olderThan, batchSize, signal),
    async claim(pushIds, owner, leaseMs) {
      const ids = [...new Set(pushIds.map((id) => id.toLowerCase()))];
      if (ids.length === 0) return new Map();
      const rows = await run(claimStatement(ids, owner, leaseMs));
      return withOthersRead(run, pushIds, new Map(rows.map((r) => [r.push_id, 'claimed' as const])));
    },
    async claimLive(pushes, owner, leaseMs, options) {
      // One entry an id; a copy that waited keeps its recheck (a fresh copy beside it must not skip its job's cancel).
      const byId = new Map<string, LedgerPush>();
      for (const p of pushes) {
        const pushId = p.pushId.toLowerCase();
        const seen = byId.get(pushId);
        byId.set(pushId, { ...p, pushId, ...(p.recheck === undefined && seen?.recheck !== undefined && { recheck: seen.recheck }) });
      }
      const distinct = [...byId.values()];
      if (distinct.length === 0) return new Map();
      const webSubscriptions = options?.webSubscriptions === true;
      const rows = await run(claimLiveStatement(distinct, owner, leaseMs, webSubscriptions));
      const states = await withOthersRead(run, pushes.map((p) => p.pushId), new Map(rows.map((r) => [r.push_id, r.state])));
      // A dead device's token may have been replaced (rare: a batch's dead pushes are asked apart, so a batch without any reads nothing more).
      // If that read fails, they are tried again later ('in-flight'), not dropped as dead.
      const deadIds = new Set([...states].flatMap(([id, state]) => (state === 'dead' ? [id.toLowerCase()] : [])));
      const dead = distinct.filter((p) => deadIds.has(p.pushId));
      const moves = dead.length === 0 ? undefined : await replacementsOf(run, dead).catch(() => 'failed' as const);
      for (const id of states.keys()) {
        if (moves === 'failed' && states.get(id) === 'dead') states.set(id, 'in-flight');
        else if (moves !== undefined && moves !== 'failed' && moves.has(id.toLowerCase())) states.set(id, 'moved');
      }
      return Object.assign(states, webSubscriptions && { subscriptions: subscriptionsOf(rows) }, typeof moves === 'object' && moves.size > 0 && { moves });
    },
    async complete(entries) {
      if (entries.length === 0) return;
      const last = new Map(entries.map((e) => [e.pushId.toLowerCase(), e.outcome]));
      await run(completeStatement(last, entries.flatMap((e) => (e.status === undefined ? [] : [e.status]))));
    },
    async doneOf(pushIds) {
      const ids = [...new Set(pushIds.map((id) => id.toLowerCase()).filter(isUuidText))];
      if (ids.length === 0) return new Set();
      const rows = await run(sql<{ push_id: string }>`
        select push_id::text as push_id from delivery_ledger where push_id = any(${ids}::uuid[]) and state = 'done'`);
      return new Set(rows.map((r) => r.push_id));
    },
    async renew(pushIds, owner) {
      if (pushIds.length === 0) return 0;
      const rows = await run(sql<{ push_id: string }>`
        update delivery_ledger set claimed_at = now()
        where push_id = any(${[...new Set(pushIds)]}::uuid[]) and state = 'sending' and owner = ${owner}
        returning push_id`);
      return rows.length;
    },
    async release(pushIds, owner) {
      if (pushIds.length === 0) return;
      await run(sql`
        delete from delivery_ledger
        where push_id = any(${[...new Set(pushIds)]}::uuid[]) and state = 'sending' and owner = ${owner}`);
    },
  };
}

/** One of the ledger's statements, run with its deadline (createDeliveryLedger). */
type Run = <R>(query: RawBuilder<R>) => Promise<R[]>;

/**
 * The states of `pushIds` given what the claim statement `decided` (by lowercase id): the rest (a
 * redelivered or duplicate push: rare) were already in the ledger: done, or another holder's. Read
 * after the insert committed, a row released meanwhile reads as 'in-flight' (try again later), which
 * is safe. If the read fails, the claims made stand and the rest are 'in-flight' too: throwing would
 * leave those claims unsent for a lease.
 */
async function withOthersRead<S extends string>(run: Run, pushIds: readonly string[], decided: Map<string, S>): Promise<Map<string, S | ClaimResult>> {
  const byId = new Map<string, S | ClaimResult>(decided);
  const others = [...new Set(pushIds.map((id) => id.toLowerCase()))].filter((id) => !byId.has(id));
  if (others.length > 0) {
    const states = await run(sql<{ push_id: string; state: string }>`
      select push_id::text as push_id, state from delivery_ledger where push_id = any(${others}::uuid[])`).catch(() => []);
    for (const r of states) byId.set(r.push_id, r.state === 'done' ? 'done' : 'in-flight');
  }
  return new Map(pushIds.map((id) => [id, byId.get(id.toLowerCase()) ?? 'in-flight']));
}

/** The claim's insert (claimStatement); `except`, a condition on `i.push_id`, leaves ids out of it. */
const claimInsert = (ids: readonly string[], owner: string, leaseMs: number, except?: RawBuilder<unknown>) => sql<{ push_id: string }>`
  insert into delivery_ledger as l (push_id, state, owner, claimed_at)
  select push_id, 'sending', ${owner}, now() from unnest(${ids}::uuid[]) as i(push_id)
  ${except === undefined ? sql`` : sql`where not (${except})`}
  order by push_id
  on conflict (push_id) do update set owner = excluded.owner, claimed_at = excluded.claimed_at
  where l.state = 'sending' and l.claimed_at < now() - make_interval(secs => ${leaseMs / 1000})
  returning l.push_id::text as push_id`;

/**
 * Claims the (lowercase, distinct) ids not in the ledger, and those whose 'sending' claim is older
 * than a lease; returns the ids claimed. Rows go in push_id order so concurrent overlapping claims
 * cannot deadlock.
 */
export const claimStatement = (ids: readonly string[], owner: string, leaseMs: number) => claimInsert(ids, owner, leaseMs);

/** A DevicePush's deviceId as a devices id, or null (the demuxer's pushes always carry one). */
const devicesId = (deviceId: string): string | null => (/^[0-9]{1,18}$/.test(deviceId) ? deviceId : null);

/**
 * claimStatement for (lowercase, distinct) device pushes, except those whose device is dead now
 * (invalidated or unregistered: 'dead'), whose row is gone ('gone': pruned once dead, or its app
 * deleted; sent, it reached whoever holds the token now, a new row), or registered to another user
 * than the push's since it was queued ('reassigned': a push stored for tomorrow would otherwise
 * reach whoever holds the token then; not asked of a push addressed to the device itself,
 * toDevice), or (a push given `recheck`, not delivered already) whose job was cancelled
 * ('cancelled') or whose user has opted out of its category or muted its object since
 * ('opted-out', 'muted'); none of them is claimed. Of the dead, claimLive then asks which had their
 * token replaced (replacementsOf, a statement of its own, so a batch without dead pushes, nearly
 * every batch, runs this statement alone, as it was before token rotation).
 * All parts read one snapshot. The device is found by its primary key (the push's deviceId) and
 * must still hold the push's token (a row's token never changes: a new token is a new row): about
 * a quarter less of PostgreSQL's work for the claim than a lookup by (app, platform, token), which
 * parsed and compared three text arrays a batch. A deviceId that is no devices id (none of
 * Herald's pushes: tests' and benchmarks' own) is not looked up. The lookup is a lateral join by
 * that key, kept from being flattened (offset 0), so the planner cannot turn it into a hash join: a plan made while devices was empty (a
 * new install) scanned the whole table for every batch until the next ANALYZE. Only pushes given
 * `recheck` read their job, opt-outs and mutes (recheckedStates), and a batch without any (pushes
 * sent soon after they were made: most) runs without that branch. The casts keep the result's types fixed, so a later
 * column type change cannot fail the prepared statement ("cached plan must not change result type").
 */
export const claimLiveStatement = (pushes: readonly LedgerPush[], owner: string, leaseMs: number, webSubscriptions = false) => {
  const ids = pushes.map((p) => p.pushId);
  const devices = sql`${pushes.map((p) => devicesId(p.deviceId))}::bigint[], ${pushes.map((p) => p.token)}::text[], ${pushes.map((p) => p.userId)}::text[], ${pushes.map((p) => p.toDevice === true)}::boolean[]`;
  const rechecked = pushes.filter((p) => p.recheck !== undefined);
  return sql<{ push_id: string; state: LiveClaimResult } & Partial<SubscriptionRow>>`
  with dead as (
    select i.push_id, d.state
    from unnest(${ids}::uuid[], ${devices}) as i(push_id, device_id, token, user_id, to_device)
    cross join lateral (
      -- Gone (pruned once dead, or its app deleted): sent, it reached whoever holds the token now, a
      -- new row (a reinstall gives an APNs token back, to another user maybe).
      select case when d.id is null then 'gone' when d.invalidated_at is not null then 'dead' else 'reassigned' end as state
      from (select 1) one left join devices d on d.id = i.device_id and d.token = i.token
      where d.id is null or d.invalidated_at is not null or (not i.to_device and d.user_id is distinct from i.user_id)
      offset 0
    ) d
    where i.device_id is not null
    ${rechecked.length === 0 ? sql`` : sql`union all ${recheckedStates(rechecked, leaseMs)}`}
  ), claimed as (${claimInsert(ids, owner, leaseMs, sql`exists (select 1 from dead where dead.push_id = i.push_id)`)})
  select push_id::text as push_id, state::text as state${webSubscriptions ? sql`, null::text as web_p256dh, null::text as web_auth, null::text as web_vapid_key` : sql``} from dead
  union all
  ${webSubscriptions ? claimedSubscriptions(pushes) : sql`select push_id, 'claimed'::text from claimed`}`;
};

/**
 * Of the pushes claimLiveStatement found dead, those whose device's token was replaced (a register
 * naming it as previousToken, migration 0045), with the live device (id, token) the chain of
 * replacements ends at, by lowercase push id; none for a chain that ends at a dead or deleted
 * device. Each link was made as the next token became a live device, so no snapshot saw two of
 * them live: no job made a push for more than one of them, and a fan-out's chunks count them once
 * (fanout-repository.ts). Each row by its primary key (lateral probes kept from being flattened: a
 * plan made on an empty devices scanned it).
 */
async function replacementsOf(run: Run, pushes: readonly LedgerPush[]): Promise<Map<string, MovedTo>> {
  const rows = await run(replacementsStatement(pushes));
  return new Map(rows.map((r) => [r.push_id, { deviceId: r.id, token: r.token }]));
}

/** replacementsOf's statement. */
export const replacementsStatement = (pushes: readonly Pick<LedgerPush, 'pushId' | 'deviceId'>[]) => sql<{ push_id: string; id: string; token: string }>`
    select p.push_id::text as push_id, m.id::text as id, m.token::text as token
    from unnest(${pushes.map((p) => p.pushId)}::uuid[], ${pushes.map((p) => devicesId(p.deviceId))}::bigint[]) as p(push_id, device_id)
    cross join lateral (${liveReplacementSql(sql.ref('p.device_id'))}) m`;

type SubscriptionRow = { web_p256dh: string | null; web_auth: string | null; web_vapid_key: string | null };

/** The subscriptions claimLiveStatement read with the web pushes it claimed, by push id: of devices with keys. */
function subscriptionsOf(rows: ReadonlyArray<{ push_id: string; state: string } & Partial<SubscriptionRow>>): Map<string, CurrentSubscription> {
  const subscriptions = new Map<string, CurrentSubscription>();
  for (const r of rows) {
    const current = webFieldsOf({ web_p256dh: r.web_p256dh ?? null, web_auth: r.web_auth ?? null, web_vapid_key: r.web_vapid_key ?? null });
    if (r.state === 'claimed' && current.webKeys !== undefined) subscriptions.set(r.push_id, current);
  }
  return subscriptions;
}

/**
 * claimLiveStatement's claimed web pushes, each with the subscription its device row holds now
 * (LiveClaims), found by its primary key and token as the claim's own lookup is (a lateral join kept
 * from being flattened, so no plan made on an empty table scans devices). APNs and FCM claims do
 * without it.
 */
const claimedSubscriptions = (pushes: readonly LedgerPush[]) => sql`
  select c.push_id, 'claimed'::text, s.web_p256dh::text, s.web_auth::text, s.web_vapid_key::text
  from claimed c
  join unnest(${pushes.map((p) => p.pushId)}::uuid[], ${pushes.map((p) => devicesId(p.deviceId))}::bigint[], ${pushes.map((p) => p.token)}::text[]) as w(push_id, device_id, token)
    on w.push_id = c.push_id::uuid
  left join lateral (select d.web_p256dh, d.web_auth, d.web_vapid_key from devices d where d.id = w.device_id and d.token = w.token offset 0) s on true`;

/**
 * The states of pushes given a recheck whose device is live and still theirs (a dead, gone or
 * reassigned one is that, above): 'cancelled' (its job was), 'opted-out' or 'muted'
 * (cancelledOrSkippedSql, of the device's holder now for a push addressed to the device), unless
 * the ledger has it done already or another pusher's live claim (a copy delivered before, or being
 * sent: that copy decides). Only pushes that waited get here; a batch without any runs the
 * statement without this branch (another prepared statement).
 */
function recheckedStates(pushes: readonly LedgerPush[], leaseMs: number) {
  const on = { jobId: sql.ref('r.job_id'), userId: sql`coalesce(case when r.to_device then d.user_id end, r.user_id)`, app: sql.ref('r.app'), category: sql.ref('r.category'), objectId: sql.ref('r.object_id') };
  return sql`
    select r.push_id, s.state
    from unnest(
      ${pushes.map((p) => p.pushId)}::uuid[], ${pushes.map((p) => devicesId(p.deviceId))}::bigint[], ${pushes.map((p) => p.token)}::text[],
      ${pushes.map((p) => p.userId)}::text[], ${pushes.map((p) => p.toDevice === true)}::boolean[], ${pushes.map((p) => p.recheck?.jobId ?? null)}::text[],
      ${pushes.map((p) => p.recheck?.app ?? null)}::text[], ${pushes.map((p) => p.recheck?.category ?? null)}::text[], ${pushes.map((p) => p.recheck?.objectId ?? null)}::text[])
      as r(push_id, device_id, token, user_id, to_device, job_id, app, category, object_id)
    left join lateral (select true as live, d.user_id from devices d where d.id = r.device_id and d.token = r.token and d.invalidated_at is null limit 1) d on true
    cross join lateral (select ${cancelledOrSkippedSql(on, new Date())} as state offset 0) s
    where s.state is not null
      and (r.device_id is null or (d.live and (r.to_device or d.user_id is not distinct from r.user_id)))
      -- Delivered already, or another pusher's copy being sent: that copy decides ('done', 'in-flight').
      -- (A scalar subquery with a limit: probed by the key, where a NOT EXISTS was planned as a scan of the ledger.)
      and not coalesce((select l.state = 'done' or l.claimed_at >= now() - make_interval(secs => ${leaseMs / 1000})
        from delivery_ledger l where l.push_id = r.push_id limit 1), false)`;
}

/**
 * Marks the (lowercase, distinct) ids done with their outcomes. Every push completed was claimed
 * first, so this updates its entry; it is written as an insert for the plan (createDeliveryLedger),
 * and one that had no entry (none in Herald's flows) is recorded done all the same, which is what
 * it is: the provider accepted it. With `statuses`, the same statement upserts those job-status
 * outcomes (push-outcomes.ts): both tables are written in one transaction and one round trip.
 */
export const completeStatement = (outcomes: ReadonlyMap<string, string>, statuses: readonly PushOutcomeEntry[] = []) => {
  const done = sql`
  insert into delivery_ledger as l (push_id, state, outcome, owner, completed_at)
  select push_id, 'done', outcome, '', now()
  from unnest(${[...outcomes.keys()]}::uuid[], ${[...outcomes.values()].map(storableCopy)}::text[]) as i(push_id, outcome) order by push_id
  on conflict (push_id) do update set state = 'done', outcome = excluded.outcome, completed_at = excluded.completed_at`;
  return statuses.length === 0 ? done : sql`with done as (${done}) ${upsertOutcomesStatement(statuses)}`;
};
