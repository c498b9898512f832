import { sql, type ExpressionBuilder, type Kysely, type NotNull, type Selectable } from 'kysely';
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
  /** When its APNs client certificate stops being valid (0039); null for token auth, none, and a certificate sealed before 0039 that no pusher has read yet. */
  apnsCertificateExpiresAt?: Date | null;
  fcmAuth?: 'service-account' | 'access-token' | null;
  fcmEndpoint?: 'google' | 'local';
  /** Grows on every credential change: a pusher rebuilds the app's provider when it moves. */
  credentialsVersion?: number;
  /** The app's own connection settings (0011): endpoint host and port, whether a CA bundle and a proxy are set. */
  apnsConnection?: ConnectionSummary;
  fcmConnection?: ConnectionSummary;
  /** Web Push (0019): whether the app has its own VAPID key pair (a pusher reads it with readWeb). */
  webVapid?: boolean;
  /** The VAPID public keys (base64url; never the private ones) and the contact subject (mailto: or https:). */
  webVapidPublicKey?: string | null;
  webVapidPreviousPublicKey?: string | null;
  webVapidSubject?: string | null;
  /** The push-service hosts its subscriptions may use; null: DEFAULT_WEB_PUSH_HOSTS. */
  webPushHosts?: string[] | null;
}

export interface ConnectionSummary {
  host: string | null;
  port: number | null;
  ca: boolean;
  proxy: boolean;
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
  /** Enabled apps sending to APNs with a client certificate, and when each certificate stops being valid (the monitor's alarm). */
  apnsCertificates(): Promise<ApnsCertificateExpiry[]>;
}

export interface ApnsCertificateExpiry {
  app: string;
  expiresAt: Date;
}

type Heavy = 'apns_ca_pem' | 'apns_proxy_secret' | 'fcm_ca_pem' | 'fcm_proxy_secret' | 'web_vapid_secret' | 'web_vapid_previous_secret';
type AppSelection = Omit<Selectable<AppsTable>, Heavy> & { apns_has_ca: boolean; apns_has_proxy: boolean; fcm_has_ca: boolean; fcm_has_proxy: boolean };

/** Every column but the CA bundles (up to 512 KB each) and sealed proxy URLs, which only a pusher building the app's provider reads. */
const appColumns = (eb: ExpressionBuilder<HeraldTables, 'apps'>) =>
  [
    'id', 'apns_topic', 'fcm_project_id', 'enabled', 'created_at', 'updated_at', 'apns_auth', 'apns_key_id', 'apns_team_id', 'apns_endpoint',
    'apns_secret', 'fcm_auth', 'fcm_endpoint', 'fcm_secret', 'credentials_version', 'apns_address', 'apns_port', 'fcm_host', 'fcm_port',
    'web_vapid_public_key', 'web_vapid_previous_public_key', 'web_vapid_subject', 'web_push_hosts', 'apns_certificate_expires_at',
    eb('apns_ca_pem', 'is not', null).$castTo<boolean>().as('apns_has_ca'),
    eb('apns_proxy_secret', 'is not', null).$castTo<boolean>().as('apns_has_proxy'),
    eb('fcm_ca_pem', 'is not', null).$castTo<boolean>().as('fcm_has_ca'),
    eb('fcm_proxy_secret', 'is not', null).$castTo<boolean>().as('fcm_has_proxy'),
  ] as const;

const toAppRow = (r: AppSelection): AppRow => ({
  id: r.id,
  apnsTopic: r.apns_topic,
  fcmProjectId: r.fcm_project_id,
  enabled: r.enabled,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  apnsAuth: r.apns_auth,
  apnsEndpoint: r.apns_endpoint,
  apnsCertificateExpiresAt: r.apns_certificate_expires_at,
  fcmAuth: r.fcm_auth,
  fcmEndpoint: r.fcm_endpoint,
  credentialsVersion: r.credentials_version,
  apnsConnection: { host: r.apns_address, port: r.apns_port, ca: r.apns_has_ca, proxy: r.apns_has_proxy },
  fcmConnection: { host: r.fcm_host, port: r.fcm_port, ca: r.fcm_has_ca, proxy: r.fcm_has_proxy },
  webVapid: r.web_vapid_public_key !== null,
  webVapidPublicKey: r.web_vapid_public_key,
  webVapidPreviousPublicKey: r.web_vapid_previous_public_key,
  webVapidSubject: r.web_vapid_subject,
  webPushHosts: r.web_push_hosts,
});

export function createAppRepository(db: Kysely<HeraldTables>): AppRepository {
  return {
    async get(id) {
      const row = await db.selectFrom('apps').select(appColumns).where('id', '=', id).executeTakeFirst();
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
        .returning(appColumns)
        .executeTakeFirstOrThrow();
      return toAppRow(row);
    },
    async list() {
      const rows = await db.selectFrom('apps').select(appColumns).orderBy('id').execute();
      return rows.map(toAppRow);
    },
    async apnsCertificates() {
      const rows = await db
        .selectFrom('apps')
        .select(['id', 'apns_certificate_expires_at'])
        .where('enabled', '=', true)
        .where('apns_auth', '=', 'certificate')
        .where('apns_certificate_expires_at', 'is not', null)
        .$narrowType<{ apns_certificate_expires_at: NotNull }>()
        .orderBy('id')
        .execute();
      return rows.map((r) => ({ app: r.id, expiresAt: r.apns_certificate_expires_at }));
    },
  };
}
