import { randomBytes } from 'node:crypto';
import { derivePushId, type DevicePush, type Registration } from '@herald/contracts';
import { createDatabase, dropSchemaAndClose, type Database } from './database.ts';

/**
 * For this lib's own specs only (not exported): @herald/testing's createTestDatabase does the
 * same for everyone else, but importing it here would make db and testing depend on each other.
 */
export const SPEC_DATABASE_URL = process.env['HERALD_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface SpecDatabase {
  readonly url: string;
  readonly schema: string;
  readonly db: Database;
  drop(): Promise<void>;
}

/** A fresh, migrated schema; drop() removes it with everything in it. */
export async function createSpecDatabase(prefix: string): Promise<SpecDatabase> {
  const schema = `herald_${prefix}_${randomBytes(4).toString('hex')}`;
  const db = createDatabase({ url: SPEC_DATABASE_URL, schema, poolSize: 5 });
  try {
    await db.migrate();
  } catch (err) {
    await dropSchemaAndClose(db);
    throw err;
  }
  return { url: SPEC_DATABASE_URL, schema, db, drop: () => dropSchemaAndClose(db) };
}

/** Minute `minute` past 12:00 UTC on 2025-01-01: the registration specs' event times. */
export const specMinute = (minute: number): string => new Date(Date.UTC(2025, 0, 1, 12, minute)).toISOString();

type RegisterEvent = Extract<Registration, { kind: 'register' }>;

/** A register of `userId` for the APNs token `token` at specMinute(`minute`), of app app-a unless `extra` says otherwise. */
export const specRegister = (token: string, minute: number, userId: string, extra: Partial<RegisterEvent> = {}): Registration => ({
  version: 1,
  kind: 'register',
  app: 'app-a',
  platform: 'apns',
  token,
  userId,
  eventAt: specMinute(minute),
  ...extra,
});

/** An unregister of the APNs token `token` at specMinute(`minute`), naming `userId` if given (a sign-out). */
export const specUnregister = (token: string, minute: number, userId?: string, app = 'app-a'): Registration => ({
  version: 1,
  kind: 'unregister',
  app,
  platform: 'apns',
  token,
  ...(userId !== undefined && { userId }),
  eventAt: specMinute(minute),
});

/** A device push of `jobId` to `deviceId` for the specs (app demo, APNs, an alert), `over` on top. */
export const specDevicePush = (jobId: string, deviceId: string, over: Partial<DevicePush> = {}): DevicePush => ({
  version: 1,
  pushId: derivePushId(jobId, deviceId),
  jobId,
  deviceId,
  app: 'demo',
  platform: 'apns',
  token: `tok-${deviceId}`,
  userId: 'u',
  content: { title: 'hi' },
  priority: 'high',
  acceptedAt: new Date().toISOString(),
  ...over,
});
