import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { appHasWebDevices, webDeviceProbe } from './app-web-devices.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;

/** A P-256 public key (uncompressed point, base64url), as browsers' p256dh and VAPID public keys are. */
function p256(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
}
const k1 = p256();
const k2 = p256();
const browser = (n: string, applicationServerKey: string): Registration =>
  ({ version: 1, kind: 'register', app: 'site', platform: 'web', token: `https://fcm.googleapis.com/fcm/send/${n}`, userId: `u-${n}`, keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') }, applicationServerKey, eventAt: '2025-03-01T10:00:00Z' }) as Registration;

beforeAll(async () => {
  t = await createSpecDatabase('webdevices');
  for (const id of ['phones', 'site']) await t.db.apps.upsert({ id });
  // 'phones' has only APNs devices; 'site' a browser subscribed with k1 and one with k2, since unsubscribed.
  await sql`
    insert into devices (app, platform, token, user_id, registered_at, last_event_at)
    select 'phones', 'apns', lpad(to_hex(g), 64, '0'), 'u' || g, now(), now() from generate_series(1, 200) g`.execute(t.db.kysely);
  await t.db.devices.applyRegistrations([browser('1', k1), browser('2', k2)]);
  await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'site', platform: 'web', token: 'https://fcm.googleapis.com/fcm/send/2', eventAt: '2025-03-01T11:00:00Z' } as Registration]);
});
afterAll(() => t?.drop());

describe('appHasWebDevices', () => {
  it('answers whether an app has a valid browser, subscribed with a given VAPID key or any', async () => {
    expect(await appHasWebDevices(t.db.kysely, 'phones')).toBe(false);
    expect(await appHasWebDevices(t.db.kysely, 'site')).toBe(true);
    expect(await appHasWebDevices(t.db.kysely, 'site', k1)).toBe(true);
    expect(await appHasWebDevices(t.db.kysely, 'site', k2)).toBe(false);
  });

  it("probes the app's browsers' own index, not every valid device of the app (a mobile-only app's answer walked them all)", async () => {
    // One connection, so the session setting applies; a table this small would otherwise be seq-scanned.
    const plans = await t.db.kysely.connection().execute(async (conn) => {
      await sql`set enable_seqscan = off`.execute(conn);
      return [await webDeviceProbe(conn, 'phones').explain(), await webDeviceProbe(conn, 'site', k1).explain()];
    });
    for (const plan of plans) expect(JSON.stringify(plan)).toMatch(/Index (Only )?Scan using devices_active_web_by_app/);
  });
});
