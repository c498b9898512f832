import type { Kysely } from 'kysely';
import type { Platform, TokenKind } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';

/** One of a user's devices as stored, valid or not (tombstones have no user and never match). */
export interface UserDevice {
  id: string;
  app: string;
  userId: string;
  platform: Platform;
  token: string;
  tokenKind: TokenKind;
  timezone: string | null;
  locale: string | null;
  registeredAt: Date | null;
  invalidatedAt: Date | null;
  invalidationReason: string | null;
}

/** A user's devices of one app, valid and invalidated, newest registration first, at most `limit` (index devices_by_app_user, 0018). */
export async function listUserDevices(db: Kysely<HeraldTables>, app: string, userId: string, limit: number): Promise<UserDevice[]> {
  const rows = await db
    .selectFrom('devices')
    .select(['id', 'app', 'user_id', 'platform', 'token', 'token_kind', 'timezone', 'locale', 'registered_at', 'invalidated_at', 'invalidation_reason'])
    .where('app', '=', app)
    .where('user_id', '=', userId)
    .orderBy('registered_at', (ob) => ob.desc().nullsLast())
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    app: r.app,
    userId: r.user_id ?? userId,
    platform: r.platform,
    token: r.token,
    tokenKind: r.token_kind,
    timezone: r.timezone,
    locale: r.locale,
    registeredAt: r.registered_at,
    invalidatedAt: r.invalidated_at,
    invalidationReason: r.invalidation_reason,
  }));
}
