import { z } from 'zod';
import { AppId } from './push-job.ts';
import { ApnsConnection, ApnsConnectionView, FcmConnection, FcmConnectionView, apnsCertificateProblem } from './provider-connection.ts';

export * from './provider-connection.ts';

const Pem = z.string().min(1).max(20_000).regex(/-----BEGIN [A-Z ]+-----/, 'must be PEM text (-----BEGIN ...-----)');
const AppleId = z.string().min(1).max(64).regex(/^[A-Za-z0-9]+$/, 'must be letters and digits');
const Topic = z.string().min(1).max(255);

/** production: api.push.apple.com; development: api.sandbox.push.apple.com; local: Herald's APNs sandbox. */
export const ApnsEndpoint = z.enum(['production', 'development', 'local']);
/** google: fcm.googleapis.com; local: Herald's FCM sandbox. */
export const FcmEndpoint = z.enum(['google', 'local']);

const apnsCredentialsWith = <E extends z.ZodType<z.infer<typeof ApnsEndpoint> | undefined>>(endpoint: E) =>
  z.discriminatedUnion('auth', [
    z.strictObject({ auth: z.literal('token'), keyPem: Pem, keyId: AppleId, teamId: AppleId, endpoint }),
    z.strictObject({
      auth: z.literal('certificate'),
      certPem: Pem.superRefine((pem, ctx) => {
        const problem = apnsCertificateProblem(pem);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      }),
      keyPem: Pem,
      passphrase: z.string().min(1).max(200).optional(),
      endpoint,
    }),
  ]);

/** An app's Apple credentials: a token-auth .p8 key with its key and team id, or a certificate and key. */
export const ApnsCredentials = apnsCredentialsWith(ApnsEndpoint.default('development'));
/**
 * New Apple credentials for an app that has some: without `endpoint` the app keeps the one it has.
 * A certificate renewed for a production app and rotated in without it had moved the app to
 * Apple's development environment, where every production token is refused.
 */
export const ApnsCredentialsRotation = apnsCredentialsWith(ApnsEndpoint.optional());
export type ApnsCredentialsRotation = z.infer<typeof ApnsCredentialsRotation>;
export type ApnsCredentials = z.infer<typeof ApnsCredentials>;

const ServiceAccountJson = z
  .string()
  .max(20_000)
  .refine((text) => {
    try {
      const v = JSON.parse(text) as Record<string, unknown>;
      return typeof v['client_email'] === 'string' && typeof v['private_key'] === 'string';
    } catch {
      return false;
    }
  }, 'must be a service-account JSON with client_email and private_key');

/** An app's Firebase credentials: a service account, or a project id with an OAuth access token (the sandbox). */
export const FcmCredentials = z.discriminatedUnion('auth', [
  z.strictObject({
    auth: z.literal('service-account'),
    serviceAccountJson: ServiceAccountJson,
    /** Default: the project_id in the service-account JSON. */
    projectId: z.string().min(1).max(255).optional(),
    endpoint: FcmEndpoint.default('google'),
  }),
  // FCM v1 takes short-lived OAuth access tokens, good "for an hour or so" (Google, "Migrate from
  // legacy FCM APIs to HTTP v1"): a fixed one would fail every push an hour after it was set, so
  // Google's endpoint takes a service account and a fixed token is for the sandbox (local) only
  // (the type stays wide: a row stored before this rule may say google).
  z.strictObject({
    auth: z.literal('access-token'),
    accessToken: z.string().min(1).max(4096),
    projectId: z.string().min(1).max(255),
    endpoint: FcmEndpoint.default('local').refine((e): boolean => e === 'local', 'an access token expires within about an hour, so it is taken for the sandbox (endpoint "local") only: for Google give a service account'),
  }),
]);
export type FcmCredentials = z.infer<typeof FcmCredentials>;

/** Add an app (admin API body; the CLI builds the same shape). */
export const AppCreate = z.strictObject({
  id: AppId,
  apnsTopic: Topic.optional(),
  enabled: z.boolean().default(true),
  apns: ApnsCredentials.optional(),
  fcm: FcmCredentials.optional(),
  /** How to reach APNs / FCM with this app's own credentials (needs them); unset parts use the pusher's defaults. */
  apnsConnection: ApnsConnection.optional(),
  fcmConnection: FcmConnection.optional(),
});
export type AppCreate = z.infer<typeof AppCreate>;

/**
 * Change an app's plain settings and connection settings (a connection field set to null is
 * cleared; a whole connection set to null clears all of it); credentials change through rotation.
 */
export const AppUpdate = z.strictObject({
  apnsTopic: Topic.nullable().optional(),
  enabled: z.boolean().optional(),
  apnsConnection: ApnsConnection.nullable().optional(),
  fcmConnection: FcmConnection.nullable().optional(),
});
export type AppUpdate = z.infer<typeof AppUpdate>;

/** Replace one or both platforms' credentials; pushers pick the new ones up without a restart. */
export const AppRotate = z
  .strictObject({ apns: ApnsCredentialsRotation.optional(), fcm: FcmCredentials.optional() })
  .refine((r) => r.apns !== undefined || r.fcm !== undefined, { message: 'give apns or fcm credentials' });
export type AppRotate = z.infer<typeof AppRotate>;

/** What the admin API and CLI show of an app: never a secret. */
export const AppView = z.object({
  id: AppId,
  apnsTopic: z.string().nullable(),
  fcmProjectId: z.string().nullable(),
  enabled: z.boolean(),
  apnsAuth: z.enum(['token', 'certificate']).nullable(),
  apnsEndpoint: ApnsEndpoint,
  /** When the APNs client certificate (apnsAuth "certificate") stops being valid, ISO 8601; null for token auth and none. */
  apnsCertificateExpiresAt: z.string().nullable(),
  fcmAuth: z.enum(['service-account', 'access-token']).nullable(),
  fcmEndpoint: FcmEndpoint,
  apnsConnection: ApnsConnectionView,
  fcmConnection: FcmConnectionView,
  credentialsVersion: z.number().int(),
  /** Web Push: the current VAPID public key (null: none yet; see GET /admin/apps/:id/web-push). */
  webVapidPublicKey: z.string().nullable(),
  updatedAt: z.string(),
});
export type AppView = z.infer<typeof AppView>;
