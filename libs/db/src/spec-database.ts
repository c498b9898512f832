import { randomBytes } from 'node:crypto';
import { derivePushId, type DevicePush } from '@herald/contracts';
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
