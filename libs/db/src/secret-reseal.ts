import { sql, type Kysely } from 'kysely';
import { proxyContext } from './app-connections.ts';
import { credentialContext } from './app-credentials.ts';
import { SecretBoxError, type SecretBox } from './secret-box.ts';
import type { AppsTable, HeraldTables } from './tables.ts';

/** The apps columns that hold SecretBox envelopes, each with the context it was sealed under. */
const SEALED: ReadonlyArray<{ column: keyof AppsTable & `${string}secret`; context: (app: string) => string }> = [
  { column: 'apns_secret', context: (app) => credentialContext('apns', app) },
  { column: 'fcm_secret', context: (app) => credentialContext('fcm', app) },
  { column: 'apns_proxy_secret', context: (app) => proxyContext('apns', app) },
  { column: 'fcm_proxy_secret', context: (app) => proxyContext('fcm', app) },
  { column: 'web_vapid_secret', context: (app) => credentialContext('web', app) },
  { column: 'web_vapid_previous_secret', context: (app) => credentialContext('web', app) },
];

/** What `herald apps reseal` did. */
export interface ResealResult {
  /** Apps read. */
  apps: number;
  /** Secrets sealed again by the current key. */
  resealed: number;
  /** Secrets the current key had sealed already. */
  current: number;
  /** Secrets changed by someone else between the read and the write: left to that change (sealed by whichever key it used). */
  changedMeanwhile: number;
  /** Secrets none of the keys opens, left as they are: `app`, the column, and why. */
  unopened: Array<{ app: string; column: string; reason: string }>;
}

/**
 * Seals every app secret again by the box's current (first) key, the step between deploying
 * HERALD_SECRET_KEY=new,old and dropping the old key. The plaintext does not change, so neither do
 * updated_at and credentials_version: pushers keep their providers, and a ban stays. Each write is
 * conditional on the envelope read, so an admin's rotation meanwhile wins. Secrets no key opens are
 * listed and left.
 */
export async function resealAppSecrets(db: Kysely<HeraldTables>, box: SecretBox): Promise<ResealResult> {
  const rows = await db
    .selectFrom('apps')
    .select(['id', ...SEALED.map((s) => s.column)])
    .orderBy('id')
    .execute();
  const result: ResealResult = { apps: rows.length, resealed: 0, current: 0, changedMeanwhile: 0, unopened: [] };
  for (const row of rows) {
    for (const { column, context } of SEALED) {
      const envelope = row[column];
      if (envelope === null) continue;
      let sealed: string | undefined;
      try {
        sealed = box.reseal(envelope, context(row.id));
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        result.unopened.push({ app: row.id, column, reason: err.message });
        continue;
      }
      if (sealed === undefined) {
        result.current++;
        continue;
      }
      const { numUpdatedRows } = await db
        .updateTable('apps')
        .set({ [column]: sealed })
        .where('id', '=', row.id)
        .where(sql.ref(column), '=', envelope)
        .executeTakeFirst();
      if (numUpdatedRows === 0n) result.changedMeanwhile++;
      else result.resealed++;
    }
  }
  return result;
}
