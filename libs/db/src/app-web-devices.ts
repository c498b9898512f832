import type { Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/**
 * Whether the app has a valid Web Push subscription (made with `vapidKey`, the VAPID public key it
 * was subscribed with, when given: a key rotation asks of the previous one). An app without VAPID keys of its own can
 * have browsers all the same (the web-pusher signs their pushes with its WEB_PUSH_VAPID_* pair),
 * so the HTTP API holds its jobs to Web Push's rules when it has one. One probe of the app's
 * valid browsers' index (devices_active_web_by_app, 0041), with or without a browser: the API asks
 * only for a job that breaks a Web Push rule alone, and caches the answer per app.
 */
export async function appHasWebDevices(db: Kysely<HeraldTables>, app: string, vapidKey?: string): Promise<boolean> {
  return (await webDeviceProbe(db, app, vapidKey).executeTakeFirst()) !== undefined;
}

/** appHasWebDevices' query. */
export function webDeviceProbe(db: Kysely<HeraldTables>, app: string, vapidKey?: string) {
  let q = db.selectFrom('devices').select('id').where('app', '=', app).where('platform', '=', 'web').where('invalidated_at', 'is', null);
  if (vapidKey !== undefined) q = q.where('web_vapid_key', '=', vapidKey);
  return q.limit(1);
}
