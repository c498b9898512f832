import { sql, type RawBuilder } from 'kysely';
import type { SegmentFilter } from '@herald/contracts';
import type { Database } from './database.ts';
import { toAudienceDevice, type AudienceDevice, type AudienceDeviceRow } from './device-targets.ts';
import { decodeCursor, encodeCursor, type AudienceCursor, type RecentFloor } from './audience-stream-cursor.ts';
import { deviceColumns, devicesOfUsers, segmentCondition, type WalkContext } from './audience-stream-devices.ts';
import { liveReplacementSql } from './device-replacement.ts';
import { DEFAULT_FOLLOWER_INDEX, refreshFollowerIndexIfStale, type FollowerIndexOptions } from './follow-index.ts';

export { AudienceCursorError } from './audience-stream-cursor.ts';

/** Who a fan-out job reaches (issue 20). */
export type AudienceSpec =
  | { kind: 'topic'; topic: string; segment?: SegmentFilter }
  | { kind: 'followers'; of: string; activeWithinDays?: number; mostRecent?: number; segment?: SegmentFilter }
  | { kind: 'broadcast'; segment?: SegmentFilter };

export interface AudienceChunk {
  /** The chunk's devices, in keyset order; `skipped` set for opt-outs/mutes of (category, objectId). */
  devices: AudienceDevice[];
  /** Users in this chunk with no active device (for "skipped: no device"), when the audience is user-based. */
  usersWithoutDevice: number;
  /** The keyset cursor after this chunk (opaque string), or null when the audience is exhausted. */
  next: string | null;
}

export interface AudienceChunkRequest {
  app: string;
  audience: AudienceSpec;
  category: string;
  objectId?: string;
  after: string | null;
  /**
   * A cursor this reader returned for the same audience: read every member after `after` up to and
   * including it, whatever `limit` says, and answer it as `next` (a chunk redone after a redelivery
   * covers exactly the range it covered the first time, so the chain of chunks keeps no gap).
   */
  until?: string;
  limit: number;
  now: Date;
  /** When the fan-out started: activeWithinDays and a segment's lastSeen count back from it in every chunk (default `now`). */
  startedAt?: Date;
  /**
   * The snapshot the fan-out started with (pg_snapshot text): a topic is read as its members were
   * then, leaving out every member whose membership changed since (default: the members of the moment).
   */
  asOf?: string;
  /** The capped follower index's settings (default DEFAULT_FOLLOWER_INDEX). */
  followerIndex?: FollowerIndexOptions;
}

type Chunk = { devices: AudienceDevice[]; usersWithoutDevice: number; next: AudienceCursor | null };

/**
 * One keyset chunk of an audience's active devices (never OFFSET, never the whole list):
 * - topic: first the user members (by user id; each user's active devices), then the single-device
 *   members (by '<platform>:<token>'; a device whose user is a subscribed member came in phase 1).
 * - followers: the edges by follower id; with mostRecent/activeWithinDays, the capped
 *   recently-active index instead (at most its cap of followers; see follow-index.ts), also by
 *   follower id, above a floor fixed when the walk began (recentFollowers).
 * - broadcast: the app's active devices by id.
 * User-based chunks stop at a user boundary, so they hold at most `limit` devices unless one user
 * alone has more. A segment drops the devices it does not match. Opt-outs and mutes are reported in
 * `skipped`, as findAudience does.
 */
export async function readAudienceChunk(db: Database, req: AudienceChunkRequest): Promise<AudienceChunk> {
  if (!Number.isInteger(req.limit) || req.limit < 1) throw new RangeError(`readAudienceChunk: limit must be a positive integer, not ${req.limit}`);
  // A segment's lastSeen, as activeWithinDays, counts back from the fan-out's start: a chunk replayed days later judges as the first did.
  const ctx: WalkContext = { db: db.kysely, app: req.app, category: req.category, objectId: req.objectId ?? null, segment: req.audience.segment, now: req.now, ...(req.startedAt !== undefined && { segmentAsOf: req.startedAt }) };
  if (req.until !== undefined) {
    const chunk = await read(ctx, { ...req, limit: UNBOUNDED }, req.until);
    return { devices: chunk.devices, usersWithoutDevice: chunk.usersWithoutDevice, next: req.until };
  }
  const chunk = await read(ctx, req, undefined);
  return { devices: chunk.devices, usersWithoutDevice: chunk.usersWithoutDevice, next: chunk.next === null ? null : encodeCursor(chunk.next) };
}

/** The limit of a read bounded by `until` (the bound, not the limit, ends it). */
const UNBOUNDED = 2_147_483_647;

async function read(ctx: WalkContext, req: AudienceChunkRequest, until: string | undefined): Promise<Chunk> {
  const a = req.audience;
  const cursors = (walks: readonly AudienceCursor['w'][]) => ({
    after: req.after === null ? null : decodeCursor(req.after, walks),
    until: until === undefined ? null : decodeCursor(until, walks),
  });
  switch (a.kind) {
    case 'broadcast':
      return broadcast(ctx, cursors(['b']), req.limit);
    case 'topic':
      return topic(ctx, a.topic, cursors(['tu', 'td']), req.limit, req.asOf);
    case 'followers':
      if (a.mostRecent !== undefined || a.activeWithinDays !== undefined) {
        const index = req.followerIndex ?? DEFAULT_FOLLOWER_INDEX;
        if (req.after === null && until === undefined) await refreshFollowerIndexIfStale(ctx.db, ctx.app, a.of, ctx.now, index);
        return recentFollowers(ctx, a, cursors(['fr']), req.limit, req.startedAt ?? null);
      }
      return followers(ctx, a.of, cursors(['f']), req.limit);
  }
}

/** Where a read starts (exclusive) and, for a chunk redone, where it ends (inclusive). */
type Range = { after: AudienceCursor | null; until: AudienceCursor | null };

/** A device the audience names by itself (every device of the app, a topic's device member), not through its user. */
const toDeviceItself = (r: AudienceDeviceRow): AudienceDevice => ({ ...toAudienceDevice(r), toDevice: true });

async function broadcast(ctx: WalkContext, range: Range, limit: number): Promise<Chunk> {
  const after = range.after?.w === 'b' ? range.after.after : null;
  const until = range.until?.w === 'b' ? sql`d.id <= ${range.until.after}::bigint` : sql`true`;
  const { rows } = await sql<AudienceDeviceRow>`
    select ${deviceColumns(ctx)} from devices d
    where d.app = ${ctx.app} and d.invalidated_at is null and ${after === null ? sql`true` : sql`d.id > ${after}::bigint`} and ${until}
      and ${segmentCondition(ctx)}
    order by d.id limit ${limit}`.execute(ctx.db);
  const last = rows[rows.length - 1];
  return { devices: rows.map(toDeviceItself), usersWithoutDevice: 0, next: rows.length < limit || last === undefined ? null : { w: 'b', after: last.id } };
}

/** A page of user ids in keyset order, then their devices; the cursor is the last user taken. */
async function userPage(ctx: WalkContext, users: readonly string[], limit: number, cursorOf: (i: number) => AudienceCursor): Promise<Chunk & { exhausted: boolean }> {
  const page = await devicesOfUsers(ctx, users, limit);
  const exhausted = users.length < limit && page.usersTaken === users.length;
  return { devices: page.devices, usersWithoutDevice: page.usersWithoutDevice, next: page.usersTaken === 0 ? null : cursorOf(page.usersTaken - 1), exhausted };
}

/**
 * A topic in two phases: its user members, then its device members whose user is not a user member
 * (those devices came in with their user). Given the fan-out's start snapshot, both phases read the
 * members as they were then: a member whose row changed since (inserted, or `subscribed` flipped:
 * changed_xid) is left out, and so is a device member whose user's row changed, so a user who
 * unsubscribes between the phases is not read twice (the job's counts would never add up) and one
 * who subscribes between them is read in neither. Without it, the members of the moment. A topic
 * deleted meanwhile has no members left (topicExists).
 */
async function topic(ctx: WalkContext, name: string, range: Range, limit: number, asOf: string | undefined): Promise<Chunk> {
  // A bound in phase 2 ('td'): phase 1 unbounded, phase 2 up to it (a null bound: none of phase 2).
  const devicesUntil = range.until?.w === 'td' ? (range.until.after ?? '') : undefined;
  if (range.after?.w === 'td') return topicDevices(ctx, name, range.after.after, limit, devicesUntil, asOf);
  const after = range.after?.w === 'tu' ? range.after.after : null;
  const until = range.until?.w === 'tu' ? sql`member_id <= ${range.until.after}` : sql`true`;
  const { rows } = await sql<{ member_id: string }>`
    select member_id from topic_members
    where app = ${ctx.app} and topic = ${name} and member_kind = 'user' and subscribed and ${unchangedSince(asOf, 'topic_members')}
      and ${after === null ? sql`true` : sql`member_id > ${after}`} and ${until} and ${topicExists(ctx.app, name)}
    order by member_id limit ${limit}`.execute(ctx.db);
  const users = rows.map((r) => r.member_id);
  const page = await userPage(ctx, users, limit, (i) => ({ w: 'tu', after: users[i] as string }));
  if (!page.exhausted || range.until?.w === 'tu') return page;
  const room = limit - page.devices.length;
  if (room < 1) return { ...page, next: { w: 'td', after: null } };
  const rest = await topicDevices(ctx, name, null, room, devicesUntil, asOf);
  return { devices: [...page.devices, ...rest.devices], usersWithoutDevice: page.usersWithoutDevice, next: rest.next };
}

/**
 * The topic exists now. A deleted topic's member rows are removed after its row, a batch at a time
 * (topic-deletion.ts), and a deletion cut short leaves them until it is finished: a fan-out running
 * when the topic was deleted reads none of them from its next chunk on, as when the row's cascade
 * removed them with it. One look-up a statement (it names no column of the rows read: a one-time
 * filter), not one a member.
 */
const topicExists = (app: string, name: string): RawBuilder<boolean> => sql<boolean>`exists (select 1 from topics tp where tp.app = ${app} and tp.name = ${name})`;

/**
 * The member row `alias` was last flipped before the snapshot `asOf` was taken (true without one);
 * with `replaced_xid`, the device row `alias` was linked to its replacement before it (or never). A
 * flip recorded under a transaction id this cluster has not reached (not below the xmax of the
 * statement's own snapshot) is from another cluster: the rows of a pg_dump restored into a new one
 * keep the old cluster's ids, far ahead of the new one's, and read as changed during every fan-out,
 * every member restored was left out of every topic push (the job done, nothing sent). Such a flip
 * is from before any fan-out here.
 */
const unchangedSince = (asOf: string | undefined, alias: string, column: 'changed_xid' | 'replaced_xid' = 'changed_xid'): RawBuilder<boolean> => {
  if (asOf === undefined) return sql<boolean>`true`;
  const xid = sql.ref(`${alias}.${column}`);
  return sql<boolean>`(${xid} is null or pg_visible_in_snapshot(${xid}, ${asOf}::pg_snapshot) or ${xid} >= pg_snapshot_xmax(pg_current_snapshot()))`;
};

/**
 * The single-device members. Given the fan-out's start snapshot, a member whose device's token was
 * replaced since the start (its link's transaction, replaced_xid, not in the snapshot: a rotation
 * committed after it, whenever it wrote the link) is read as the live device its chain of
 * replacements ends at (replacedMembers): the membership the rotation copied to the new token, in
 * the same transaction, changed since the start and is left out, as every such change is, and the
 * old token is dead, so its push would reach neither. A member replaced before the start is left
 * out as any dead one: its new token's membership, as of the start, is read at its own place. Such
 * a row counts toward `limit` and the cursor as any other, so a chunk redone covers the same range.
 */
async function topicDevices(ctx: WalkContext, name: string, after: string | null, limit: number, until: string | undefined, asOf: string | undefined): Promise<Chunk> {
  const { rows } = await sql<AudienceDeviceRow & { member_id: string; replaced: boolean }>`
    select m.member_id, d.invalidated_at is not null as replaced, ${deviceColumns(ctx)}
    from topic_members m
    join devices d on d.app = m.app and d.platform = split_part(m.member_id, ':', 1)
      and d.token = substr(m.member_id, strpos(m.member_id, ':') + 1)
      and ${asOf === undefined ? sql`d.invalidated_at is null` : sql`(d.invalidated_at is null or (d.replaced_by is not null and not ${unchangedSince(asOf, 'd', 'replaced_xid')}))`}
    where m.app = ${ctx.app} and m.topic = ${name} and m.member_kind = 'device' and m.subscribed and ${unchangedSince(asOf, 'm')}
      and ${after === null ? sql`true` : sql`m.member_id > ${after}`} and ${until === undefined ? sql`true` : sql`m.member_id <= ${until}`}
      and not ${userMemberHides(ctx, name, asOf)} and ${segmentCondition(ctx)} and ${topicExists(ctx.app, name)}
    order by m.member_id limit ${limit}`.execute(ctx.db);
  const last = rows[rows.length - 1];
  const next: AudienceCursor | null = rows.length < limit || last === undefined ? null : { w: 'td', after: last.member_id };
  if (asOf === undefined || !rows.some((r) => r.replaced)) return { devices: rows.map(toDeviceItself), usersWithoutDevice: 0, next };
  const replacements = await replacedMembers(ctx, name, rows.filter((r) => r.replaced).map((r) => r.id), asOf);
  const devices: AudienceDevice[] = [];
  const taken = new Set<string>();
  for (const r of rows) {
    const device = r.replaced ? replacements.get(r.id) : r;
    if (device === undefined || taken.has(device.id)) continue;
    taken.add(device.id);
    devices.push(toDeviceItself(device));
  }
  return { devices, usersWithoutDevice: 0, next };
}

/**
 * A user member of the topic hides the devices of its user (`d`, and a replaced member's new
 * device, whose user is the old one's) if it is subscribed now, or changed since the start (then
 * phase 1 may have read it).
 */
function userMemberHides(ctx: WalkContext, name: string, asOf: string | undefined): RawBuilder<boolean> {
  return sql<boolean>`exists (
        select 1 from topic_members u
        where u.app = ${ctx.app} and u.topic = ${name} and u.member_kind = 'user' and u.member_id = d.user_id
          and ${asOf === undefined ? sql`u.subscribed` : sql`(u.subscribed or not ${unchangedSince(asOf, 'u')})`})`;
}

/**
 * Of device members whose token was replaced since the fan-out started (these dead devices, by
 * id), the live device each chain of replacements ends at, when its own membership of the topic
 * is subscribed now and changed since the start (a rotation's copy, which the walk leaves out):
 * one unsubscribed since is left out, as any member who unsubscribes while the fan-out runs, and
 * one the walk reads as of the start is read at its own place. Under the same user-member and
 * segment conditions as the members' own devices.
 */
async function replacedMembers(ctx: WalkContext, name: string, deadIds: readonly string[], asOf: string): Promise<Map<string, AudienceDeviceRow>> {
  const { rows } = await sql<AudienceDeviceRow & { dead_id: string }>`
    select dead.id::text as dead_id, ${deviceColumns(ctx)}
    from unnest(${[...deadIds]}::bigint[]) as dead(id)
    cross join lateral (${liveReplacementSql(sql.ref('dead.id'))}) r
    join devices d on d.id = r.id
    where exists (
        select 1 from topic_members n
        where n.app = ${ctx.app} and n.topic = ${name} and n.member_kind = 'device' and n.member_id = d.platform || ':' || d.token
          and n.subscribed and not ${unchangedSince(asOf, 'n')})
      and not ${userMemberHides(ctx, name, asOf)} and ${segmentCondition(ctx)}`.execute(ctx.db);
  return new Map(rows.map((r) => [r.dead_id, r]));
}

async function followers(ctx: WalkContext, of: string, range: Range, limit: number): Promise<Chunk> {
  const after = range.after?.w === 'f' ? range.after.after : null;
  const until = range.until?.w === 'f' ? sql`follower <= ${range.until.after}` : sql`true`;
  const { rows } = await sql<{ follower: string }>`
    select follower from follows
    where app = ${ctx.app} and followee = ${of} and following and ${after === null ? sql`true` : sql`follower > ${after}`} and ${until}
    order by follower limit ${limit}`.execute(ctx.db);
  const users = rows.map((r) => r.follower);
  const page = await userPage(ctx, users, limit, (i) => ({ w: 'f', after: users[i] as string }));
  return page.exhausted ? { ...page, next: null } : page;
}

/**
 * The recently-active walk pages by follower id (a key that does not change while the fan-out runs),
 * over the followers active since the cutoff and, with mostRecent, at or above the floor fixed when
 * the walk began (the N-th most recent then). Activity only moves forward, so a follower in the
 * audience at the start stays in it and is read wherever the cursor is; one who becomes active
 * meanwhile may join (a few more than N).
 */
async function recentFollowers(
  ctx: WalkContext,
  a: Extract<AudienceSpec, { kind: 'followers' }>,
  range: Range,
  limit: number,
  startedAt: Date | null,
): Promise<Chunk> {
  const c = range.after?.w === 'fr' ? range.after : null;
  const u = range.until?.w === 'fr' ? range.until : null;
  const cutoff = a.activeWithinDays === undefined ? null : new Date((startedAt ?? ctx.now).getTime() - a.activeWithinDays * 86_400_000).toISOString();
  const cutoffCond = cutoff === null ? sql`true` : sql`r.active_at >= ${cutoff}::timestamptz`;
  const floor = c !== null ? c.floor : u !== null ? u.floor : await recentFloor(ctx, a, cutoffCond);
  const floorCond =
    floor === null
      ? sql`true`
      : floor.at === null
        ? sql`(r.active_at is not null or r.follower <= ${floor.follower})`
        : sql`(r.active_at > ${floor.at}::timestamptz or (r.active_at = ${floor.at}::timestamptz and r.follower <= ${floor.follower}))`;
  const { rows } = await sql<{ follower: string }>`
    select r.follower from follower_recent r
    where r.app = ${ctx.app} and r.followee = ${a.of} and ${c === null ? sql`true` : sql`r.follower > ${c.after}`}
      and ${u === null ? sql`true` : sql`r.follower <= ${u.after}`} and ${cutoffCond} and ${floorCond}
    order by r.follower limit ${limit}`.execute(ctx.db);
  const users = rows.map((r) => r.follower);
  const page = await userPage(ctx, users, limit, (i) => ({ w: 'fr', after: users[i] as string, floor }));
  return page.exhausted ? { ...page, next: null } : page;
}

/** The N-th most recent follower (active_at desc nulls last, follower) now; null without mostRecent or with fewer than N. */
async function recentFloor(ctx: WalkContext, a: Extract<AudienceSpec, { kind: 'followers' }>, cutoffCond: RawBuilder<unknown>): Promise<RecentFloor | null> {
  if (a.mostRecent === undefined) return null;
  const { rows } = await sql<{ follower: string; at: string | null }>`
    select r.follower, r.active_at::text as at from follower_recent r
    where r.app = ${ctx.app} and r.followee = ${a.of} and ${cutoffCond}
    order by r.active_at desc nulls last, r.follower offset ${a.mostRecent - 1} limit 1`.execute(ctx.db);
  const r = rows[0];
  return r === undefined ? null : { at: r.at, follower: r.follower };
}

/**
 * The audience's size, cheap: topic subscriber and follower counts are kept by triggers (they count
 * members, users or devices, not devices: `exact: false`); the recently-active index is at most its
 * cap; a broadcast is counted exactly over the (app, id) index, with its segment if any.
 */
export async function audienceSize(db: Database, req: { app: string; audience: AudienceSpec; now?: Date }): Promise<{ size: number; exact: boolean }> {
  const a = req.audience;
  const k = db.kysely;
  switch (a.kind) {
    case 'topic': {
      const row = await k.selectFrom('topics').select('subscriber_count').where('app', '=', req.app).where('name', '=', a.topic).executeTakeFirst();
      return { size: Number(row?.subscriber_count ?? 0), exact: false };
    }
    case 'followers': {
      if (a.activeWithinDays !== undefined) {
        const cutoff = new Date((req.now ?? new Date()).getTime() - a.activeWithinDays * 86_400_000);
        const { rows } = await sql<{ n: string }>`
          select count(*) as n from follower_recent where app = ${req.app} and followee = ${a.of} and active_at >= ${cutoff.toISOString()}::timestamptz`.execute(k);
        return { size: Math.min(Number(rows[0]?.n ?? 0), a.mostRecent ?? Infinity), exact: false };
      }
      const row = await k.selectFrom('followees').select('follower_count').where('app', '=', req.app).where('followee', '=', a.of).executeTakeFirst();
      return { size: Math.min(Number(row?.follower_count ?? 0), a.mostRecent ?? Infinity), exact: false };
    }
    case 'broadcast': {
      const ctx: WalkContext = { db: k, app: req.app, category: '', objectId: null, segment: a.segment, now: req.now ?? new Date() };
      const { rows } = await sql<{ n: string }>`
        select count(*) as n from devices d where d.app = ${req.app} and d.invalidated_at is null and ${segmentCondition(ctx)}`.execute(k);
      return { size: Number(rows[0]?.n ?? 0), exact: true };
    }
  }
}
