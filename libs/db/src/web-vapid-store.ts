import { sql, type Kysely } from 'kysely';
import type { WebPushUpdate } from '@herald/contracts';
import { appHasWebDevices } from './app-web-devices.ts';
import type { HeraldTables } from './tables.ts';

/** One VAPID key pair, base64url as web-push's generateVAPIDKeys() gives it. */
export interface VapidKeyPair {
  publicKey: string;
  privateKey: string;
}

/** An app's VAPID identity for the web pusher (the private keys opened). */
export interface StoredWebCredentials {
  subject: string;
  current: VapidKeyPair;
  /** The pair before the last rotation: subscriptions made under it are still signed with it. */
  previous?: VapidKeyPair;
}

/** Outcomes the caller turns into AppAdminError (app-credentials.ts). */
export type VapidWriteResult = 'done' | 'unknown-app' | 'vapid-exists' | 'no-vapid' | 'previous-vapid-in-use';

interface Sealer {
  seal(privateKey: string): string;
  open(envelope: string): string;
}

async function explain(db: Kysely<HeraldTables>, id: string, missing: 'vapid-exists' | 'no-vapid'): Promise<VapidWriteResult> {
  const app = await db.selectFrom('apps').select('id').where('id', '=', id).executeTakeFirst();
  return app === undefined ? 'unknown-app' : missing;
}

/** The app's first pair; refused ('vapid-exists') when it has one, so a second call cannot silently drop a key browsers use. */
export async function generateVapid(db: Kysely<HeraldTables>, id: string, subject: string, keys: VapidKeyPair, box: Sealer): Promise<VapidWriteResult> {
  const done = await db
    .updateTable('apps')
    .set({
      web_vapid_public_key: keys.publicKey,
      web_vapid_secret: box.seal(keys.privateKey),
      web_vapid_subject: subject,
      credentials_version: sql<number>`credentials_version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('web_vapid_public_key', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return done !== undefined ? 'done' : explain(db, id, 'vapid-exists');
}

/**
 * Current → previous (the pair before it is forgotten), `keys` → current, in one transaction that
 * locks the app's row first (FOR NO KEY UPDATE: other writes of the row wait, inserts naming the app,
 * a device's register say, do not). credentials_version moves: pushers rebuild the app's web provider
 * without a restart. Refused ('previous-vapid-in-use') while a live browser subscription was made
 * with the previous pair, unless `force`: rotating again forgot that pair's private key for good,
 * and every push to those browsers was parked until each subscribed again (two rotations close
 * together, by two operators or a retried request, did it without a word). Of two rotations at
 * once, the second reads the row the first wrote and is refused.
 */
export async function rotateVapid(db: Kysely<HeraldTables>, id: string, subject: string | undefined, keys: VapidKeyPair, box: Sealer, force = false): Promise<VapidWriteResult> {
  // In the caller's transaction when it has one, else in one of its own.
  const inTransaction = <T>(work: (trx: Kysely<HeraldTables>) => Promise<T>): Promise<T> => (db.isTransaction ? work(db) : db.transaction().execute(work));
  return inTransaction(async (trx) => {
    const app = await trx.selectFrom('apps').select(['web_vapid_public_key', 'web_vapid_previous_public_key']).where('id', '=', id).forNoKeyUpdate().executeTakeFirst();
    if (app === undefined) return 'unknown-app';
    if (app.web_vapid_public_key === null) return 'no-vapid';
    const previous = app.web_vapid_previous_public_key;
    if (!force && previous !== null && (await appHasWebDevices(trx, id, previous))) return 'previous-vapid-in-use';
    await trx
      .updateTable('apps')
      .set({
        web_vapid_previous_public_key: sql<string>`web_vapid_public_key`,
        web_vapid_previous_secret: sql<string>`web_vapid_secret`,
        web_vapid_public_key: keys.publicKey,
        web_vapid_secret: box.seal(keys.privateKey),
        ...(subject !== undefined && { web_vapid_subject: subject }),
        credentials_version: sql<number>`credentials_version + 1`,
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .execute();
    return 'done';
  });
}

/** Subject (signs every push: credentials_version moves) and/or the push-service allow-list (read at the doors). */
export async function updateWebPush(db: Kysely<HeraldTables>, id: string, changes: WebPushUpdate): Promise<VapidWriteResult> {
  if (changes.subject !== undefined) {
    const app = await db.selectFrom('apps').select('web_vapid_public_key').where('id', '=', id).executeTakeFirst();
    if (app === undefined) return 'unknown-app';
    if (app.web_vapid_public_key === null) return 'no-vapid';
  }
  const done = await db
    .updateTable('apps')
    .set({
      ...(changes.subject !== undefined && { web_vapid_subject: changes.subject, credentials_version: sql<number>`credentials_version + 1` }),
      ...(changes.hosts !== undefined && { web_push_hosts: changes.hosts }),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return done !== undefined ? 'done' : 'unknown-app';
}

/** The app's VAPID identity with the private keys opened, or undefined when it has none. */
export async function readWeb(db: Kysely<HeraldTables>, id: string, box: Pick<Sealer, 'open'>): Promise<StoredWebCredentials | undefined> {
  const r = await db
    .selectFrom('apps')
    .select(['web_vapid_public_key', 'web_vapid_secret', 'web_vapid_subject', 'web_vapid_previous_public_key', 'web_vapid_previous_secret'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (r?.web_vapid_public_key == null || r.web_vapid_secret === null || r.web_vapid_subject === null) return undefined;
  const previous =
    r.web_vapid_previous_public_key !== null && r.web_vapid_previous_secret !== null
      ? { publicKey: r.web_vapid_previous_public_key, privateKey: box.open(r.web_vapid_previous_secret) }
      : undefined;
  return {
    subject: r.web_vapid_subject,
    current: { publicKey: r.web_vapid_public_key, privateKey: box.open(r.web_vapid_secret) },
    ...(previous !== undefined && { previous }),
  };
}

/** The subscription a web push was sent to, as its device row held it then (the DevicePush's deviceId, token, keys and key). */
export interface SentSubscription {
  deviceId: string;
  endpoint: string;
  keys: { p256dh: string; auth: string };
  /** The VAPID public key the row recorded (none: NULL, the web-pusher's pair). */
  vapidKey?: string | undefined;
}

/**
 * Record on the device the VAPID public key its subscription was found to take: the pair whose
 * push its push service accepted after refusing the one the row recorded (a guess made at
 * registration). Pushes to it, from any web-pusher and after a restart, are then signed with that
 * key first. Only while the row still holds the subscription the push went to (its endpoint, its
 * keys and the key it recorded, live): a browser that subscribed again meanwhile (new keys, a key
 * named) wins. Neither the event time nor updated_at moves: no registration happened. One
 * statement, on the key-mismatch path only. True when written.
 */
export async function recordWebVapidKey(db: Kysely<HeraldTables>, sent: SentSubscription, publicKey: string): Promise<boolean> {
  if (!/^[0-9]{1,18}$/.test(sent.deviceId)) return false;
  const done = await db
    .updateTable('devices')
    .set({ web_vapid_key: publicKey })
    .where('id', '=', sent.deviceId)
    .where('platform', '=', 'web')
    .where('token', '=', sent.endpoint)
    .where('web_p256dh', '=', sent.keys.p256dh)
    .where('web_auth', '=', sent.keys.auth)
    .where(sql<boolean>`web_vapid_key is not distinct from ${sent.vapidKey ?? null}`)
    .where('invalidated_at', 'is', null)
    .executeTakeFirst();
  return done.numUpdatedRows > 0n;
}

