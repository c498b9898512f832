import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { SegmentFilter } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { skipReasonSql, toAudienceDevice, type AudienceDevice, type AudienceDeviceRow } from './device-targets.ts';
import { segmentSql } from './segment-sql.ts';

/** What every audience walk needs to turn device rows into AudienceDevices. */
export interface WalkContext {
  db: Kysely<HeraldTables>;
  app: string;
  category: string;
  objectId: string | null;
  segment: SegmentFilter | undefined;
  now: Date;
  /** What a segment's `lastSeen within` counts back from: the fan-out's start, alike in every chunk (default `now`). */
  segmentAsOf?: Date;
}

/**
 * The columns of an AudienceDevice from the devices row `d`, with its skip reason (shared with
 * findAudience): the opt-outs and mutes of `user`, by default the device's own user.
 */
export function deviceColumns(ctx: WalkContext, user: RawBuilder<unknown> = sql.ref('d.user_id')): RawBuilder<unknown> {
  const skip = skipReasonSql({ userId: user, app: sql.ref('d.app'), category: ctx.category, objectId: ctx.objectId }, ctx.now);
  return sql`d.id, d.user_id, d.app, d.platform, d.token, d.token_kind, d.timezone, d.locale,
    d.web_p256dh, d.web_auth, d.web_vapid_key, ${skip} as skipped`;
}

/** The segment as a condition on `d` (true when the audience has none). */
export const segmentCondition = (ctx: WalkContext): RawBuilder<boolean> => (ctx.segment === undefined ? sql<boolean>`true` : segmentSql(ctx.segment, ctx.segmentAsOf ?? ctx.now, 'd'));

/**
 * The devices of a keyset page of users, cut at a user boundary so the page holds at most `limit`
 * devices (a single user with more devices than `limit` still comes whole). `users` are in keyset
 * order; returns the devices, how many users had no active device, and how many users it took.
 */
export async function devicesOfUsers(ctx: WalkContext, users: readonly string[], limit: number): Promise<{ devices: AudienceDevice[]; usersWithoutDevice: number; usersTaken: number }> {
  if (users.length === 0) return { devices: [], usersWithoutDevice: 0, usersTaken: 0 };
  const { rows } = await sql<Partial<AudienceDeviceRow> & { ord: string; matches: boolean | null }>`
    select u.ord, ${deviceColumns(ctx)}, ${segmentCondition(ctx)} as matches
    from unnest(${[...users]}::text[]) with ordinality as u(user_id, ord)
    left join devices d on d.app = ${ctx.app} and d.user_id = u.user_id and d.invalidated_at is null
    order by u.ord, d.id`.execute(ctx.db);
  const perUser = users.map(() => ({ devices: [] as AudienceDevice[], active: 0 }));
  for (const r of rows) {
    const slot = perUser[Number(r.ord) - 1];
    if (slot === undefined || r.id === undefined || r.id === null) continue;
    slot.active += 1;
    if (r.matches === true) slot.devices.push(toAudienceDevice(r as AudienceDeviceRow));
  }
  const devices: AudienceDevice[] = [];
  let usersWithoutDevice = 0;
  let usersTaken = 0;
  for (const slot of perUser) {
    if (usersTaken > 0 && devices.length + slot.devices.length > limit) break;
    devices.push(...slot.devices);
    if (slot.active === 0) usersWithoutDevice += 1;
    usersTaken += 1;
  }
  return { devices, usersWithoutDevice, usersTaken };
}
