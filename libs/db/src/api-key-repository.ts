import { createHash, randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { ApiKeyKind, HeraldTables } from './tables.ts';

/** An API key as stored (the key itself is never stored, only its SHA-256). */
export interface ApiKeyRow {
  id: string;
  /** The team; for an operator key, the operator's name. */
  team: string;
  /** App ids the key may act for; '*' means every app. Empty for an operator key. */
  apps: string[];
  createdAt: Date;
  revokedAt: Date | null;
  /** team: the HTTP API's /v1 routes; operator: the dashboard, its write actions and the admin routes. */
  kind: ApiKeyKind;
}

/** Who an operator key belongs to, for the audit log. */
export interface OperatorKey {
  id: string;
  name: string;
}

export interface ApiKeyRepository {
  /** Create a key; the returned `key` is shown once and cannot be recovered. */
  create(team: string, apps: readonly string[]): Promise<{ key: string; row: ApiKeyRow }>;
  /** The live (unrevoked) team key with this secret, or undefined (an operator key is not a team key). */
  findByKey(key: string): Promise<ApiKeyRow | undefined>;
  /** Create an operator key for a person; shown once, like a team key. */
  createOperator(name: string): Promise<{ key: string; row: ApiKeyRow }>;
  /** The live operator key with this secret, or undefined (a team key is not an operator key). */
  findOperatorByKey(key: string): Promise<OperatorKey | undefined>;
  list(): Promise<ApiKeyRow[]>;
  revoke(id: string): Promise<boolean>;
}

/** Keys are 32 random bytes, so a plain SHA-256 is enough to make a stolen table useless. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

export const keyAllowsApp = (key: Pick<ApiKeyRow, 'apps'>, app: string): boolean => key.apps.includes('*') || key.apps.includes(app);

const toRow = (r: { id: string; team: string; apps: string[]; created_at: Date; revoked_at: Date | null; kind: ApiKeyKind }): ApiKeyRow => ({
  id: r.id,
  team: r.team,
  apps: r.apps,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  kind: r.kind,
});

const COLUMNS = ['id', 'team', 'apps', 'created_at', 'revoked_at', 'kind'] as const;

export function createApiKeyRepository(db: Kysely<HeraldTables>): ApiKeyRepository {
  const insert = async (kind: ApiKeyKind, team: string, apps: string[]) => {
    const id = randomBytes(6).toString('hex');
    // hk_ for team keys, hko_ for operator keys: a person can tell them apart at a glance.
    const key = `${kind === 'operator' ? 'hko' : 'hk'}_${id}_${randomBytes(32).toString('base64url')}`;
    const row = await db
      .insertInto('api_keys')
      .values({ id, team, key_hash: hashApiKey(key), apps, revoked_at: null, kind })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return { key, row: toRow(row) };
  };
  const live = (key: string, kind: ApiKeyKind) =>
    db.selectFrom('api_keys').select(COLUMNS).where('key_hash', '=', hashApiKey(key)).where('revoked_at', 'is', null).where('kind', '=', kind).executeTakeFirst();
  return {
    create: (team, apps) => insert('team', team, [...new Set(apps)]),
    async findByKey(key) {
      const row = await live(key, 'team');
      return row === undefined ? undefined : toRow(row);
    },
    createOperator: (name) => insert('operator', name, []),
    async findOperatorByKey(key) {
      const row = await live(key, 'operator');
      return row === undefined ? undefined : { id: row.id, name: row.team };
    },
    async list() {
      const rows = await db.selectFrom('api_keys').select(COLUMNS).orderBy('created_at').execute();
      return rows.map(toRow);
    },
    async revoke(id) {
      const r = await db.updateTable('api_keys').set({ revoked_at: sql<Date>`now()` }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
  };
}
