import { createHash, randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** A team's API key as stored (the key itself is never stored, only its SHA-256). */
export interface ApiKeyRow {
  id: string;
  team: string;
  /** App ids the key may act for; '*' means every app. */
  apps: string[];
  createdAt: Date;
  revokedAt: Date | null;
}

export interface ApiKeyRepository {
  /** Create a key; the returned `key` is shown once and cannot be recovered. */
  create(team: string, apps: readonly string[]): Promise<{ key: string; row: ApiKeyRow }>;
  /** The live (unrevoked) key with this secret, or undefined. */
  findByKey(key: string): Promise<ApiKeyRow | undefined>;
  list(): Promise<ApiKeyRow[]>;
  revoke(id: string): Promise<boolean>;
}

/** Keys are 32 random bytes, so a plain SHA-256 is enough to make a stolen table useless. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

export const keyAllowsApp = (key: Pick<ApiKeyRow, 'apps'>, app: string): boolean => key.apps.includes('*') || key.apps.includes(app);

const toRow = (r: { id: string; team: string; apps: string[]; created_at: Date; revoked_at: Date | null }): ApiKeyRow => ({
  id: r.id,
  team: r.team,
  apps: r.apps,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export function createApiKeyRepository(db: Kysely<HeraldTables>): ApiKeyRepository {
  return {
    async create(team, apps) {
      const id = randomBytes(6).toString('hex');
      const key = `hk_${id}_${randomBytes(32).toString('base64url')}`;
      const row = await db
        .insertInto('api_keys')
        .values({ id, team, key_hash: hashApiKey(key), apps: [...new Set(apps)], revoked_at: null })
        .returning(['id', 'team', 'apps', 'created_at', 'revoked_at'])
        .executeTakeFirstOrThrow();
      return { key, row: toRow(row) };
    },
    async findByKey(key) {
      const row = await db
        .selectFrom('api_keys')
        .select(['id', 'team', 'apps', 'created_at', 'revoked_at'])
        .where('key_hash', '=', hashApiKey(key))
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return row === undefined ? undefined : toRow(row);
    },
    async list() {
      const rows = await db.selectFrom('api_keys').select(['id', 'team', 'apps', 'created_at', 'revoked_at']).orderBy('created_at').execute();
      return rows.map(toRow);
    },
    async revoke(id) {
      const r = await db.updateTable('api_keys').set({ revoked_at: sql<Date>`now()` }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
  };
}
