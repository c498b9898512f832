import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Platform } from '@herald/contracts';
import { applyToFollowerIndex, rebalanceFollowerIndex } from './follow-index.ts';
import type { HeraldTables } from './tables.ts';
import { deviceMemberId } from './topic-store.ts';
import { CLOCK_SKEW_ALLOWANCE } from './later-event.ts';
import { removeStoredPushes } from './scheduled-push-repository.ts';

/** What an erasure removed, and what it left because it is not the app's (every-app preferences are an operator's). */
export interface UserErasure {
  app: string;
  /** PostgreSQL's clock when the erasure was made: an event of the user from before it is stale from now on. */
  erasedAt: Date;
  /** Devices of the user: unregistered (none gets a push again), their user, zone, language, app version, last-seen time and Web Push keys removed. */
  devices: number;
  /** Topic memberships of the user (deleted) and of the user's devices in force (unsubscribed, kept under the token), of topics that exist (rows left of a deleted topic are deleted, not counted); subscriber counts follow. */
  topicMemberships: number;
  /** Follow edges from and to the user, removed (follower counts and recently-active indexes follow). */
  follows: number;
  optOuts: number;
  mutes: number;
  /** Pushes stored for later to the user: removed; null when they could not be looked through (`storedPushesError`). */
  storedPushes: number | null;
  storedPushesError?: string;
  /** The user's opt-outs and mutes of every app (app null): kept, an operator's to remove (`herald erase-user --all-apps`). */
  keptEveryAppOptOuts: number;
  keptEveryAppMutes: number;
}

/**
 * The key an erasure is kept under: SHA-256 of the app id, a NUL and the user id, as migration
 * 0040's herald_user_key computes it. The user id itself is not kept after the erasure; the key is
 * enough to recognise that user's late events. A pseudonym, not anonymous: user ids that can be
 * guessed (an e-mail address, a number) can be tried against it.
 */
export function erasureKey(app: string, userId: string): Buffer {
  return createHash('sha256').update(app).update('\0').update(userId).digest();
}

type Edge = { app: string; followee: string; follower: string; following: boolean };

/**
 * Erases one user of one app. First the erasure is recorded (user_erasures, by key) in a short
 * transaction holding the app's erasure lock exclusively and no row: it waits for the app's writes
 * under way, and from its commit the database refuses any row naming the user with an older event
 * time, from every writer (migration 0040's triggers), so a register, subscribe or follow on its way
 * stays out. Its time is PostgreSQL's clock once the lock is had. Then, in a second transaction,
 * the user's devices become tombstones without the user or any of their fields (unregistered at the
 * erasure; the token stays, unattributed, as after a logout), topic memberships of the user go and
 * those of the user's devices become unsubscribed tombstones, follow edges from and to the user go
 * (others' counts and indexes kept right), the app's opt-outs and mutes of the user go, and so do
 * the user's sign-outs kept on the app's devices (device_signouts); it holds
 * no lock a writer of the app waits for beyond the rows it changes. A failure there leaves the
 * erasure recorded and the data as it was: erasing again (idempotent) finishes it. Last, outside
 * both, the pushes stored for later to the user are deleted: a scan of every stored push (no index
 * names their user), so a failure there (a statement bound on a vast backlog) is reported in
 * `storedPushesError` and leaves the rest erased; those pushes are not sent (their devices are
 * unregistered: the claim drops them) and go when they fall due.
 */
export async function eraseUser(db: Kysely<HeraldTables>, app: string, userId: string): Promise<UserErasure> {
  // The guard keeps out the user's events stamped at or before erased_at, so erased_at also covers
  // the events of the user already applied: one stamped ahead by a fast clock (a phone a minute
  // fast), applied before the erasure and delivered again after it (a batch deferred after its
  // registrations committed, a replay), passed the guard and brought the user back. Capped at the
  // clock plus the skew allowed a reporter's clock (later-event.ts): a phone a day fast must not keep
  // the user's new sign-up out for a day (a device's own event further ahead is kept out by its
  // tombstone's mark, eraseDevices). The follow edges, either way (a popular user's are millions),
  // are read before the app's erasure lock, which every register, subscribe and follow of the app
  // waits on; the user's devices and memberships, few and indexed, under it, so a register being
  // written as the erasure begins is seen. The erasure's time returned is PostgreSQL's clock.
  const { rows: followRows } = await sql<{ seen: Date | null }>`
    select greatest(
      (select max(event_at) from follows where app = ${app} and follower = ${userId}),
      (select max(event_at) from follows where app = ${app} and followee = ${userId})) as seen`.execute(db);
  const follows = followRows[0]?.seen ?? null;
  const erasedAt = await db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(herald_erasure_lock(${app}))`.execute(tx);
    const { rows } = await sql<{ at: Date }>`
      insert into user_erasures (app, user_key, erased_at)
      values (${app}, herald_user_key(${app}, ${userId}), greatest(clock_timestamp(), least(
        coalesce(greatest(${follows}::timestamptz,
          (select max(last_event_at) from devices where app = ${app} and user_id = ${userId}),
          (select max(event_at) from topic_members where app = ${app} and member_kind = 'user' and member_id = ${userId})), '-infinity'),
        clock_timestamp() + ${CLOCK_SKEW_ALLOWANCE})))
      on conflict (app, user_key) do update set erased_at = greatest(user_erasures.erased_at, excluded.erased_at)
      returning least(erased_at, clock_timestamp()) as at`.execute(tx);
    return rows[0]?.at as Date;
  });
  const { counts, edges } = await db.transaction().execute(async (tx) => {
    await sql`select set_config('herald.erasing', 'on', true)`.execute(tx);
    const devices = await eraseDevices(tx, app, userId);
    const topicMemberships = await eraseMemberships(tx, app, userId, devices);
    const { edges, follows } = await eraseFollows(tx, app, userId);
    const optOuts = Number((await tx.deleteFrom('opt_outs').where('app', '=', app).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows);
    const mutes = Number((await tx.deleteFrom('mutes').where('app', '=', app).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows);
    // The sign-outs of the user kept on devices of the app (device-registration.ts): part of the
    // devices' records, not counted apart; a late one from before the erasure is kept out (0044).
    // In key order, as the registrars keep them (keepSignouts): no deadlock with one keeping hers.
    await sql`
      delete from device_signouts where (app, platform, token, user_id) in (
        select app, platform, token, user_id from device_signouts where app = ${app} and user_id = ${userId} order by 1, 2, 3, 4 for update)`.execute(tx);
    const kept = (await sql<{ opt_outs: string; mutes: string }>`
      select (select count(*) from opt_outs where app is null and user_id = ${userId}) as opt_outs,
             (select count(*) from mutes where app is null and user_id = ${userId}) as mutes`.execute(tx)).rows[0];
    return {
      counts: { app, erasedAt, devices: devices.length, topicMemberships, follows, optOuts, mutes, keptEveryAppOptOuts: Number(kept?.opt_outs ?? 0), keptEveryAppMutes: Number(kept?.mutes ?? 0) },
      edges,
    };
  });
  try {
    // The indexes of those the user followed lost a follower: trimmed or topped up as after an unfollow
    // (failing, each is set right at its followee's next follow event or refill).
    await rebalanceFollowerIndex(db, edges);
    return { ...counts, storedPushes: await eraseStoredPushes(db, app, userId) };
  } catch (err) {
    return { ...counts, storedPushes: null, storedPushesError: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The user's devices (live, unregistered and dead) become tombstones without the user, every
 * attribute a register gave removed; one live is unregistered as of its last event (no later: the
 * user's own later events are kept out by the erasure's guard, migration 0040). Their last event
 * stays: moved to the erasure, it made another user's login on the phone from before the erasure
 * (Bob signing in on the phone Alice logged out of, his register delayed by a backlog) stale, and
 * the phone got no pushes until his next register. Locked in the registrar's order (app, platform,
 * token). Returns their platform and token.
 */
async function eraseDevices(tx: Kysely<HeraldTables>, app: string, userId: string): Promise<{ platform: Platform; token: string }[]> {
  const { rows } = await sql<{ platform: Platform; token: string }>`
    with target as (
      select id from devices where app = ${app} and user_id = ${userId}
      order by app, platform, token for update
    )
    update devices d set user_id = null, timezone = null, locale = null, app_version = null, last_seen_at = null,
      web_p256dh = null, web_auth = null, web_vapid_key = null, registered_at = null,
      invalidated_at = coalesce(d.invalidated_at, least(d.last_event_at, now())), invalidation_reason = coalesce(d.invalidation_reason, 'unregistered'),
      -- A last event stamped ahead of its application by more than the allowance (a fast clock) joins
      -- the fast-clock mark (later-event.ts): the same register delivered again is stale, past the
      -- erasure's capped cover, while a register from a right clock after it still wins.
      event_ahead_mark = case when d.last_event_at > coalesce(d.event_applied_at, d.updated_at) + ${CLOCK_SKEW_ALLOWANCE}
        then greatest(d.event_ahead_mark, d.last_event_at) else d.event_ahead_mark end,
      -- Her tokens' links to the tokens that replaced them go (migration 0045): a push made before the
      -- erasure is not moved to a token of hers, or of whoever signs in on the phone after.
      replaced_by = null, replaced_at = null, replaced_xid = null,
      user_changed_at = now(), updated_at = now()
    from target where d.id = target.id
    returning d.platform, d.token`.execute(tx);
  return rows;
}

/**
 * The user's memberships are unsubscribed (the count triggers run on update) and deleted; those of the
 * user's devices (they name a token, not the user) are unsubscribed at the erasure and kept, so a
 * subscribe of the token from before it, arriving later, is stale. Rows left of a deleted topic
 * (their removal under way or cut short, topic-deletion.ts) are deleted, the user's and the devices',
 * and not counted: they were no membership. Returns how many memberships of the user there were in
 * topics that exist, and how many of the devices' in them were in force.
 */
async function eraseMemberships(tx: Kysely<HeraldTables>, app: string, userId: string, devices: readonly { platform: Platform; token: string }[]): Promise<number> {
  const deviceIds = devices.map((d) => deviceMemberId(d.platform, d.token));
  const members = sql`m.app = ${app} and ((m.member_kind = 'user' and m.member_id = ${userId}) or (m.member_kind = 'device' and m.member_id = any(${deviceIds}::text[])))`;
  // The topics first, in the order membership batches lock them (topic-store.ts), then the member
  // rows: the count trigger locks the topics after the update, and a batch holding a topic while it
  // waited on a member row the erasure held deadlocked with it (40P01). Held, they stay there.
  await sql`
    select 1 from topics where app = ${app} and name in (select m.topic from topic_members m where ${members})
    order by app, name for no key update`.execute(tx);
  // Every row in the writers' order (app, topic, member kind, member id), a deleted topic's too: its
  // removal (topic-deletion.ts, in the same order) and this do not deadlock; createTopic waits for them.
  const { rows } = await sql<{ member_kind: string; was: boolean; live: boolean }>`
    with target as (
      select m.topic, m.member_kind, m.member_id, m.subscribed as was,
        exists (select 1 from topics t where t.app = m.app and t.name = m.topic) as live
      from topic_members m where ${members}
      order by m.app, m.topic, m.member_kind, m.member_id for update of m
    ), changed as (
      update topic_members m set subscribed = false, event_at = greatest(m.event_at, now()),
        changed_xid = case when m.subscribed then pg_current_xact_id() else m.changed_xid end
      from target t where m.app = ${app} and m.topic = t.topic and m.member_kind = t.member_kind and m.member_id = t.member_id and t.live
    ), gone as (
      delete from topic_members m using target t
      where m.app = ${app} and m.topic = t.topic and m.member_kind = t.member_kind and m.member_id = t.member_id and not t.live
    )
    select member_kind, was, live from target`.execute(tx);
  await sql`delete from topic_members where app = ${app} and member_kind = 'user' and member_id = ${userId}`.execute(tx);
  // The user's rows of topics there are (deleted), and the devices' memberships of them that were in force (now unsubscribed).
  return rows.filter((r) => r.live && (r.member_kind === 'user' || r.was)).length;
}

/**
 * Edges from the user are unfollowed first (others' counts by trigger, their indexes as after an
 * unfollow), then every edge from and to the user is deleted with the user's own count and index
 * (edges to the user are not unfollowed one by one: the count and index they would change go too,
 * and a user with a million followers is erased in one delete of them).
 */
async function eraseFollows(tx: Kysely<HeraldTables>, app: string, userId: string): Promise<{ edges: Edge[]; follows: number }> {
  const { rows } = await sql<Edge>`
    with target as (select followee from follows where app = ${app} and follower = ${userId} and following order by app, followee, follower for update)
    update follows f set following = false from target t where f.app = ${app} and f.followee = t.followee and f.follower = ${userId}
    returning f.app, f.followee, f.follower, f.following`.execute(tx);
  await applyToFollowerIndex(tx, rows);
  // In the writers' order (app, followee, follower): a batch of follow events does not deadlock with it.
  const { numAffectedRows } = await sql`
    with target as (select followee, follower from follows where app = ${app} and (follower = ${userId} or followee = ${userId}) order by app, followee, follower for update)
    delete from follows f using target t where f.app = ${app} and f.followee = t.followee and f.follower = t.follower`.execute(tx);
  await sql`delete from follower_recent where app = ${app} and (follower = ${userId} or followee = ${userId})`.execute(tx);
  await sql`delete from followees where app = ${app} and followee = ${userId}`.execute(tx);
  return { edges: rows, follows: Number(numAffectedRows ?? 0) };
}

/**
 * Pushes stored for later (scheduled_pushes) to the user of the app, deleted with their outcome
 * (`invalid`, code `user-erased`) in one statement, as a cancel records its own: deleted alone,
 * they stayed counted in flight, their job `sending` (or `cancelling`) for good and an audience
 * job's fan-out never settled. The outcome names the device, not the user (push_outcomes name
 * none). Every stored push is read (no index names their user).
 */
async function eraseStoredPushes(db: Kysely<HeraldTables>, app: string, userId: string): Promise<number> {
  return removeStoredPushes(db, sql`payload->>'app' = ${app} and payload->>'userId' = ${userId}`, {
    outcome: 'invalid',
    code: 'user-erased',
    reason: 'its user was erased while it was stored for later',
  });
}

/** The user's opt-outs and mutes of every app (app null: an operator's), deleted; for `herald erase-user --all-apps`. */
export async function eraseEveryAppPreferences(db: Kysely<HeraldTables>, userId: string): Promise<{ optOuts: number; mutes: number }> {
  return db.transaction().execute(async (tx) => ({
    optOuts: Number((await tx.deleteFrom('opt_outs').where('app', 'is', null).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows),
    mutes: Number((await tx.deleteFrom('mutes').where('app', 'is', null).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows),
  }));
}
