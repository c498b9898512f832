import { sql, type Kysely, type Selectable } from 'kysely';
import type { AppsTable, HeraldTables } from './tables.ts';

export interface AppRow {
  id: string;
  apnsTopic: string | null;
  fcmProjectId: string | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** Which stored credentials the app has (null: none, the pushers' process-level provider is used). */
  apnsAuth?: 'token' | 'certificate' | null;
  apnsEndpoint?: 'production' | 'development' | 'local';
  fcmAuth?: 'service-account' | 'access-token' | null;
  fcmEndpoint?: 'google' | 'local';
  /** Grows on every credential change: a pusher rebuilds the app's provider when it moves. */
  credentialsVersion?: number;
}

/** Fields left undefined keep their stored value (or the column default on insert). */
export interface AppUpsert {
  id: string;
  apnsTopic?: string | null;
  fcmProjectId?: string | null;
  enabled?: boolean;
}

export interface AppRepository {
  get(id: string): Promise<AppRow | undefined>;
  upsert(app: AppUpsert): Promise<AppRow>;
  list(): Promise<AppRow[]>;
}

const toAppRow = (r: Selectable<AppsTable>): AppRow => ({
  id: r.id,
  apnsTopic: r.apns_topic,
  fcmProjectId: r.fcm_project_id,
  enabled: r.enabled,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  apnsAuth: r.apns_auth,
  apnsEndpoint: r.apns_endpoint,
  fcmAuth: r.fcm_auth,
  fcmEndpoint: r.fcm_endpoint,
  credentialsVersion: r.credentials_version,
});

export function createAppRepository(db: Kysely<HeraldTables>): AppRepository {
  return {
    async get(id) {
      const row = await db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : toAppRow(row);
    },
    async upsert(app) {
      const changes = {
        ...(app.apnsTopic !== undefined ? { apns_topic: app.apnsTopic } : {}),
        ...(app.fcmProjectId !== undefined ? { fcm_project_id: app.fcmProjectId } : {}),
        ...(app.enabled !== undefined ? { enabled: app.enabled } : {}),
      };
      const row = await db
        .insertInto('apps')
        .values({ id: app.id, apns_topic: null, fcm_project_id: null, ...changes })
        .onConflict((oc) => oc.column('id').doUpdateSet({ ...changes, updated_at: sql<Date>`now()` }))
        .returningAll()
        .executeTakeFirstOrThrow();
      return toAppRow(row);
    },
    async list() {
      const rows = await db.selectFrom('apps').selectAll().orderBy('id').execute();
      return rows.map(toAppRow);
    },
  };
}
