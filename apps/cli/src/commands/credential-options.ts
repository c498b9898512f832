import { readFile } from 'node:fs/promises';
import { ApnsCredentialsRotation, FcmCredentials, describeIssues } from '@herald/contracts';
import type { Command } from 'commander';

export interface CredentialFlags {
  apnsKeyFile?: string;
  apnsKeyId?: string;
  apnsTeamId?: string;
  apnsCertFile?: string;
  apnsCertKeyFile?: string;
  apnsPassphrase?: string;
  apnsPassphraseFile?: string;
  apnsEndpoint?: string;
  fcmServiceAccount?: string;
  fcmAccessToken?: string;
  fcmAccessTokenFile?: string;
  fcmProject?: string;
  fcmEndpoint?: string;
}

/** The credential flags `apps add` and `apps rotate` share. */
export function credentialOptions(cmd: Command): Command {
  return cmd
    .option('--apns-key-file <file>', 'APNs token auth: the .p8 key (with --apns-key-id and --apns-team-id)')
    .option('--apns-key-id <id>', 'APNs token auth: key id')
    .option('--apns-team-id <id>', 'APNs token auth: team id')
    .option('--apns-cert-file <file>', 'APNs certificate auth: PEM certificate (with --apns-cert-key-file)')
    .option('--apns-cert-key-file <file>', 'APNs certificate auth: PEM private key')
    .option('--apns-passphrase-file <file>', 'APNs certificate auth: a file holding the key passphrase')
    .option('--apns-passphrase <text>', 'APNs certificate auth: key passphrase (visible to other users in ps and kept in shell history: prefer --apns-passphrase-file)')
    .option('--apns-endpoint <endpoint>', "production, development or local (the sandbox); default: a new app development, an app's rotation keeps the one it has")
    .option('--fcm-service-account <file>', 'FCM: service-account JSON file')
    .option('--fcm-access-token <token>', 'FCM: an OAuth access token (with --fcm-project), for the sandbox only (--fcm-endpoint local, its default): Google\'s last about an hour')
    .option('--fcm-access-token-file <file>', 'FCM: a file holding the access token (not on the command line)')
    .option('--fcm-project <projectId>', 'FCM: project id (default: the one in the service-account file)')
    .option('--fcm-endpoint <endpoint>', 'google (the default for a service account) or local (the sandbox; the default for an access token)');
}

/** Validate flags with the admin API's contract; the error names what (e.g. "APNs credentials") and each failing field. */
export function check<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: import('zod').ZodError } }, what: string, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`${what}: ${describeIssues(r.error)}`);
  return r.data;
}

const endpoint = (v: string | undefined) => (v === undefined ? {} : { endpoint: v });

/**
 * A secret from `--x-file` (its content, trailing newline dropped) or `--x` (then a warning: a
 * command line is visible to other users in ps and stays in shell history); undefined for neither.
 */
export async function secretFlag(flag: string, inline: string | undefined, file: string | undefined, secret: (value: string) => boolean = () => true): Promise<string | undefined> {
  if (inline !== undefined && file !== undefined) throw new Error(`give ${flag} or ${flag}-file, not both`);
  if (file !== undefined) {
    try {
      return (await readFile(file, 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      throw new Error(`${flag}-file: cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (inline !== undefined && secret(inline)) process.stderr.write(`herald: warning: ${flag} on the command line is visible to other users (ps) and kept in shell history; use ${flag}-file\n`);
  return inline;
}

/** APNs credentials from the flags (validated with the same contract as the admin API's rotation: no endpoint given, none set), or undefined. */
export async function apnsFromFlags(o: CredentialFlags): Promise<ApnsCredentialsRotation | undefined> {
  if (o.apnsKeyFile !== undefined) {
    const keyPem = await readFile(o.apnsKeyFile, 'utf8');
    return check(ApnsCredentialsRotation, 'APNs credentials', { auth: 'token', keyPem, keyId: o.apnsKeyId, teamId: o.apnsTeamId, ...endpoint(o.apnsEndpoint) });
  }
  if (o.apnsCertFile !== undefined) {
    const [certPem, keyPem] = await Promise.all([readFile(o.apnsCertFile, 'utf8'), readFile(o.apnsCertKeyFile ?? '', 'utf8')]);
    const passphrase = await secretFlag('--apns-passphrase', o.apnsPassphrase, o.apnsPassphraseFile);
    return check(ApnsCredentialsRotation, 'APNs credentials', { auth: 'certificate', certPem, keyPem, ...(passphrase !== undefined && { passphrase }), ...endpoint(o.apnsEndpoint) });
  }
  return undefined;
}

/** FCM credentials from the flags, or undefined. */
export async function fcmFromFlags(o: CredentialFlags): Promise<FcmCredentials | undefined> {
  if (o.fcmServiceAccount !== undefined) {
    const serviceAccountJson = await readFile(o.fcmServiceAccount, 'utf8');
    return check(FcmCredentials, 'FCM credentials', { auth: 'service-account', serviceAccountJson, ...(o.fcmProject !== undefined && { projectId: o.fcmProject }), ...endpoint(o.fcmEndpoint) });
  }
  const accessToken = await secretFlag('--fcm-access-token', o.fcmAccessToken, o.fcmAccessTokenFile);
  if (accessToken !== undefined) {
    return check(FcmCredentials, 'FCM credentials', { auth: 'access-token', accessToken, projectId: o.fcmProject, ...endpoint(o.fcmEndpoint) });
  }
  return undefined;
}
