import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Platform } from '@herald/contracts';
import { applyToFollowerIndex, rebalanceFollowerIndex } from './follow-index.ts';
import type { HeraldTables } from './tables.ts';
import { deviceMemberId } from './topic-store.ts';

/** What an erasure removed, and what it left because it is not the app's (every-app preferences are an operator's). */
export interface UserErasure {
  app: string;
  /** PostgreSQL's clock when the erasure was made: an event of the user from before it is stale from now on. */
  erasedAt: Date;
  /** Devices of the user: unregistered (none gets a push again), their user, zone, language, app version, last-seen time and Web Push keys removed. */
  devices: number;
  /** Topic memberships of the user and of the user's devices, removed (subscriber counts follow). */
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
 * The key an erasure is kept under: SHA-256 of the app id, a NUL and the user id. The user id
 * itself is not kept after the erasure; the key is enough to recognise that user's late events.
 */
export function erasureKey(app: string, userId: string): Buffer {
  return createHash('sha256').update(app).update('\0').update(userId).digest();
}

type Edge = { app: string; followee: string; follower: string; following: boolean };

/**
 * Erases one user of one app, in one transaction: the erasure is recorded (user_erasures, by key),
 * the user's devices become tombstones without the user or any of their fields (unregistered at the
 * erasure; the token stays, unattributed, so a register from before the erasure delivered late stays
 * stale as after a logout, and the registrar's look at user_erasures stops those of tokens it has no
 * row of), topic memberships of the user and of those devices and follow edges from and to the user
 * go (their counts and indexes kept right), and the app's opt-outs and mutes of the user go. Then,
 * outside it, the pushes stored for later to the user are deleted: a scan of every stored push (no
 * index names their user), so a failure there (a statement bound on a vast backlog) is reported in
 * `storedPushesError` and leaves the rest erased; those pushes are not sent anyway (their devices are
 * unregistered) and go when they fall due.
 */
export async function eraseUser(db: Kysely<HeraldTables>, app: string, userId: string): Promise<UserErasure> {
  const key = erasureKey(app, userId);
  const { counts, edges } = await db.transaction().execute(async (tx) => {
    const erasedAt = (await sql<{ at: Date }>`
      insert into user_erasures (app, user_key, erased_at) values (${app}, ${key}, now())
      on conflict (app, user_key) do update set erased_at = greatest(user_erasures.erased_at, excluded.erased_at)
      returning erased_at as at`.execute(tx)).rows[0]?.at as Date;
    const devices = await eraseDevices(tx, app, userId);
    const topicMemberships = await eraseMemberships(tx, app, userId, devices);
    const { edges, follows } = await eraseFollows(tx, app, userId);
    const optOuts = Number((await tx.deleteFrom('opt_outs').where('app', '=', app).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows);
    const mutes = Number((await tx.deleteFrom('mutes').where('app', '=', app).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows);
    const kept = (await sql<{ opt_outs: string; mutes: string }>`
      select (select count(*) from opt_outs where app is null and user_id = ${userId}) as opt_outs,
             (select count(*) from mutes where app is null and user_id = ${userId}) as mutes`.execute(tx)).rows[0];
    return {
      counts: { app, erasedAt, devices: devices.length, topicMemberships, follows, optOuts, mutes, keptEveryAppOptOuts: Number(kept?.opt_outs ?? 0), keptEveryAppMutes: Number(kept?.mutes ?? 0) },
      edges,
    };
  });
  // Other followees' indexes lost a follower: trimmed or topped up as after an unfollow.
  await rebalanceFollowerIndex(db, edges.filter((e) => e.followee !== userId));
  try {
    return { ...counts, storedPushes: await eraseStoredPushes(db, app, userId) };
  } catch (err) {
    return { ...counts, storedPushes: null, storedPushesError: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The user's devices (live, unregistered and dead) become tombstones without the user: unregistered
 * at the erasure if live, their last event moved to the erasure (a register from before it is
 * stale), every attribute a register gave removed. Locked in the registrar's order (app, platform,
 * token): no deadlock with a batch of registrations. Returns their platform and token.
 */
async function eraseDevices(tx: Kysely<HeraldTables>, app: string, userId: string): Promise<{ platform: Platform; token: string }[]> {
  const { rows } = await sql<{ platform: Platform; token: string }>`
    with target as (
      select id from devices where app = ${app} and user_id = ${userId}
      order by app, platform, token for update
    )
    update devices d set user_id = null, timezone = null, locale = null, app_version = null, last_seen_at = null,
      web_p256dh = null, web_auth = null, web_vapid_key = null, registered_at = null,
      invalidated_at = coalesce(d.invalidated_at, now()), invalidation_reason = coalesce(d.invalidation_reason, 'unregistered'),
      last_event_at = greatest(d.last_event_at, now()), event_applied_at = now(), user_changed_at = now(), updated_at = now()
    from target where d.id = target.id
    returning d.platform, d.token`.execute(tx);
  return rows;
}

/** Memberships of the user, and of the user's devices: unsubscribed first (the count triggers run on update), then deleted. */
async function eraseMemberships(tx: Kysely<HeraldTables>, app: string, userId: string, devices: readonly { platform: Platform; token: string }[]): Promise<number> {
  const deviceIds = devices.map((d) => deviceMemberId(d.platform, d.token));
  const members = sql`app = ${app} and ((member_kind = 'user' and member_id = ${userId}) or (member_kind = 'device' and member_id = any(${deviceIds}::text[])))`;
  await sql`
    with target as (select topic, member_kind, member_id from topic_members where ${members} and subscribed order by app, topic, member_kind, member_id for update)
    update topic_members m set subscribed = false, changed_xid = pg_current_xact_id()
    from target t where m.app = ${app} and m.topic = t.topic and m.member_kind = t.member_kind and m.member_id = t.member_id`.execute(tx);
  const { numAffectedRows } = await sql`delete from topic_members where ${members}`.execute(tx);
  return Number(numAffectedRows ?? 0);
}

/** Edges from and to the user: unfollowed first (counts by trigger, the indexes as after an unfollow), then deleted with the user's own index. */
async function eraseFollows(tx: Kysely<HeraldTables>, app: string, userId: string): Promise<{ edges: Edge[]; follows: number }> {
  const edges = sql`app = ${app} and (follower = ${userId} or followee = ${userId})`;
  const { rows } = await sql<Edge>`
    with target as (select followee, follower from follows where ${edges} and following order by app, followee, follower for update)
    update follows f set following = false from target t where f.app = ${app} and f.followee = t.followee and f.follower = t.follower
    returning f.app, f.followee, f.follower, f.following`.execute(tx);
  await applyToFollowerIndex(tx, rows);
  const { numAffectedRows } = await sql`delete from follows where ${edges}`.execute(tx);
  await sql`delete from follower_recent where app = ${app} and (follower = ${userId} or followee = ${userId})`.execute(tx);
  await sql`delete from followees where app = ${app} and followee = ${userId}`.execute(tx);
  return { edges: rows, follows: Number(numAffectedRows ?? 0) };
}

/** Pushes stored for later (scheduled_pushes) to the user of the app: every stored push is read (no index names their user). */
async function eraseStoredPushes(db: Kysely<HeraldTables>, app: string, userId: string): Promise<number> {
  const { numAffectedRows } = await sql`delete from scheduled_pushes where payload->>'app' = ${app} and payload->>'userId' = ${userId}`.execute(db);
  return Number(numAffectedRows ?? 0);
}

/**
 * When each of the given users of an app was last erased, by `${app}\0${userId}` (absent: never).
 * The registrar reads it to treat a user's events from before the erasure as stale.
 */
export async function erasuresOf(db: Kysely<HeraldTables>, users: readonly { app: string; userId: string }[]): Promise<Map<string, Date>> {
  const found = new Map<string, Date>();
  if (users.length === 0) return found;
  const byKey = new Map(users.map((u) => [erasureKey(u.app, u.userId).toString('hex'), `${u.app}\0${u.userId}`]));
  const { rows } = await sql<{ user_key: Buffer; erased_at: Date }>`
    select user_key, erased_at from user_erasures
    where (app, user_key) in (select * from unnest(${users.map((u) => u.app)}::text[], ${users.map((u) => erasureKey(u.app, u.userId))}::bytea[]))`.execute(db);
  for (const r of rows) {
    const user = byKey.get(r.user_key.toString('hex'));
    if (user !== undefined) found.set(user, r.erased_at);
  }
  return found;
}

/** The user's opt-outs and mutes of every app (app null: an operator's), deleted; for `herald erase-user --all-apps`. */
export async function eraseEveryAppPreferences(db: Kysely<HeraldTables>, userId: string): Promise<{ optOuts: number; mutes: number }> {
  return db.transaction().execute(async (tx) => ({
    optOuts: Number((await tx.deleteFrom('opt_outs').where('app', 'is', null).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows),
    mutes: Number((await tx.deleteFrom('mutes').where('app', 'is', null).where('user_id', '=', userId).executeTakeFirst()).numDeletedRows),
  }));
}
