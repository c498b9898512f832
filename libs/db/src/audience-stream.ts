import { sql } from 'kysely';
import type { SegmentFilter } from '@herald/contracts';
import type { Database } from './database.ts';
import type { AudienceDevice } from './device-targets.ts';
import { decodeCursor, encodeCursor, type AudienceCursor } from './audience-stream-cursor.ts';
import { deviceColumns, devicesOfUsers, segmentCondition, toAudienceDevice, type DeviceRow, type WalkContext } from './audience-stream-devices.ts';
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
  limit: number;
  now: Date;
  /** The capped follower index's settings (default DEFAULT_FOLLOWER_INDEX). */
  followerIndex?: FollowerIndexOptions;
}

type Chunk = { devices: AudienceDevice[]; usersWithoutDevice: number; next: AudienceCursor | null };

/**
 * One keyset chunk of an audience's active devices (never OFFSET, never the whole list):
 * - topic: first the user members (by user id; each user's active devices), then the single-device
 *   members (by '<platform>:<token>'; a device whose user is a subscribed member came in phase 1).
 * - followers: the edges by follower id; with mostRecent/activeWithinDays, the capped
 *   recently-active index instead (at most its cap of followers; see follow-index.ts).
 * - broadcast: the app's active devices by id.
 * User-based chunks stop at a user boundary, so they hold at most `limit` devices unless one user
 * alone has more. A segment drops the devices it does not match. Opt-outs and mutes are reported in
 * `skipped`, as findAudience does.
 */
export async function readAudienceChunk(db: Database, req: AudienceChunkRequest): Promise<AudienceChunk> {
  if (!Number.isInteger(req.limit) || req.limit < 1) throw new RangeError(`readAudienceChunk: limit must be a positive integer, not ${req.limit}`);
  const ctx: WalkContext = { db: db.kysely, app: req.app, category: req.category, objectId: req.objectId ?? null, segment: req.audience.segment, now: req.now };
  const chunk = await read(ctx, req);
  return { devices: chunk.devices, usersWithoutDevice: chunk.usersWithoutDevice, next: chunk.next === null ? null : encodeCursor(chunk.next) };
}

async function read(ctx: WalkContext, req: AudienceChunkRequest): Promise<Chunk> {
  const a = req.audience;
  switch (a.kind) {
    case 'broadcast':
      return broadcast(ctx, req.after === null ? null : decodeCursor(req.after, ['b']), req.limit);
    case 'topic':
      return topic(ctx, a.topic, req.after === null ? null : decodeCursor(req.after, ['tu', 'td']), req.limit);
    case 'followers':
      if (a.mostRecent !== undefined || a.activeWithinDays !== undefined) {
        const index = req.followerIndex ?? DEFAULT_FOLLOWER_INDEX;
        if (req.after === null) await refreshFollowerIndexIfStale(ctx.db, ctx.app, a.of, ctx.now, index);
        return recentFollowers(ctx, a, req.after === null ? null : decodeCursor(req.after, ['fr']), req.limit);
      }
      return followers(ctx, a.of, req.after === null ? null : decodeCursor(req.after, ['f']), req.limit);
  }
}

async function broadcast(ctx: WalkContext, cursor: AudienceCursor | null, limit: number): Promise<Chunk> {
  const after = cursor?.w === 'b' ? cursor.after : null;
  const { rows } = await sql<DeviceRow>`
    select ${deviceColumns(ctx)} from devices d
    where d.app = ${ctx.app} and d.invalidated_at is null and ${after === null ? sql`true` : sql`d.id > ${after}::bigint`}
      and ${segmentCondition(ctx)}
    order by d.id limit ${limit}`.execute(ctx.db);
  const last = rows[rows.length - 1];
  return { devices: rows.map(toAudienceDevice), usersWithoutDevice: 0, next: rows.length < limit || last === undefined ? null : { w: 'b', after: last.id } };
}

/** A page of user ids in keyset order, then their devices; the cursor is the last user taken. */
async function userPage(ctx: WalkContext, users: readonly string[], limit: number, cursorOf: (i: number) => AudienceCursor): Promise<Chunk & { exhausted: boolean }> {
  const page = await devicesOfUsers(ctx, users, limit);
  const exhausted = users.length < limit && page.usersTaken === users.length;
  return { devices: page.devices, usersWithoutDevice: page.usersWithoutDevice, next: page.usersTaken === 0 ? null : cursorOf(page.usersTaken - 1), exhausted };
}

async function topic(ctx: WalkContext, name: string, cursor: AudienceCursor | null, limit: number): Promise<Chunk> {
  if (cursor?.w === 'td') return topicDevices(ctx, name, cursor.after, limit);
  const after = cursor?.w === 'tu' ? cursor.after : null;
  const { rows } = await sql<{ member_id: string }>`
    select member_id from topic_members
    where app = ${ctx.app} and topic = ${name} and member_kind = 'user' and subscribed and ${after === null ? sql`true` : sql`member_id > ${after}`}
    order by member_id limit ${limit}`.execute(ctx.db);
  const users = rows.map((r) => r.member_id);
  const page = await userPage(ctx, users, limit, (i) => ({ w: 'tu', after: users[i] as string }));
  if (!page.exhausted) return page;
  const room = limit - page.devices.length;
  if (room < 1) return { ...page, next: { w: 'td', after: null } };
  const rest = await topicDevices(ctx, name, null, room);
  return { devices: [...page.devices, ...rest.devices], usersWithoutDevice: page.usersWithoutDevice, next: rest.next };
}

async function topicDevices(ctx: WalkContext, name: string, after: string | null, limit: number): Promise<Chunk> {
  const { rows } = await sql<DeviceRow & { member_id: string }>`
    select m.member_id, ${deviceColumns(ctx)}
    from topic_members m
    join devices d on d.app = m.app and d.platform = split_part(m.member_id, ':', 1)
      and d.token = substr(m.member_id, strpos(m.member_id, ':') + 1) and d.invalidated_at is null
    where m.app = ${ctx.app} and m.topic = ${name} and m.member_kind = 'device' and m.subscribed
      and ${after === null ? sql`true` : sql`m.member_id > ${after}`}
      and not exists (
        select 1 from topic_members u
        where u.app = m.app and u.topic = m.topic and u.member_kind = 'user' and u.member_id = d.user_id and u.subscribed)
      and ${segmentCondition(ctx)}
    order by m.member_id limit ${limit}`.execute(ctx.db);
  const last = rows[rows.length - 1];
  return { devices: rows.map(toAudienceDevice), usersWithoutDevice: 0, next: rows.length < limit || last === undefined ? null : { w: 'td', after: last.member_id } };
}

async function followers(ctx: WalkContext, of: string, cursor: AudienceCursor | null, limit: number): Promise<Chunk> {
  const after = cursor?.w === 'f' ? cursor.after : null;
  const { rows } = await sql<{ follower: string }>`
    select follower from follows
    where app = ${ctx.app} and followee = ${of} and following and ${after === null ? sql`true` : sql`follower > ${after}`}
    order by follower limit ${limit}`.execute(ctx.db);
  const users = rows.map((r) => r.follower);
  const page = await userPage(ctx, users, limit, (i) => ({ w: 'f', after: users[i] as string }));
  return page.exhausted ? { ...page, next: null } : page;
}

async function recentFollowers(
  ctx: WalkContext,
  a: Extract<AudienceSpec, { kind: 'followers' }>,
  cursor: AudienceCursor | null,
  limit: number,
): Promise<Chunk> {
  const c = cursor?.w === 'fr' ? cursor : null;
  const taken = c?.taken ?? 0;
  const want = Math.min(limit, (a.mostRecent ?? Infinity) - taken);
  if (want < 1) return { devices: [], usersWithoutDevice: 0, next: null };
  const cutoff = a.activeWithinDays === undefined ? null : new Date(ctx.now.getTime() - a.activeWithinDays * 86_400_000).toISOString();
  // Keyset on (active_at desc nulls last, follower): after (at, f) come older activity, or the same with a greater id, then NULLs.
  const afterCond =
    c === null
      ? sql`true`
      : c.at === null
        ? sql`(r.active_at is null and r.follower > ${c.after})`
        : sql`(r.active_at < ${c.at}::timestamptz or (r.active_at = ${c.at}::timestamptz and r.follower > ${c.after}) or r.active_at is null)`;
  const { rows } = await sql<{ follower: string; at: string | null }>`
    select r.follower, r.active_at::text as at from follower_recent r
    where r.app = ${ctx.app} and r.followee = ${a.of} and ${afterCond}
      and ${cutoff === null ? sql`true` : sql`r.active_at >= ${cutoff}::timestamptz`}
    order by r.active_at desc nulls last, r.follower limit ${want}`.execute(ctx.db);
  const users = rows.map((r) => r.follower);
  const page = await userPage(ctx, users, want, (i) => ({ w: 'fr', at: rows[i]?.at ?? null, after: users[i] as string, taken: taken + i + 1 }));
  const done = page.exhausted || (page.next?.w === 'fr' && page.next.taken >= (a.mostRecent ?? Infinity));
  return done ? { ...page, next: null } : page;
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
