import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApnsSettings, FcmSettings } from './settings.ts';

/** The APNs topic the sandbox-backed default provider uses when an app names none. */
export const SANDBOX_DEFAULT_TOPIC = 'com.herald.sandbox';

/** The fields of `<stateDir>/sandbox.json` (written by apps/sandbox) that providers use. */
interface SandboxFile {
  apns: { address: string; port: number; caFile: string; keyFile: string; keyId: string; teamId: string; clientCertFile?: string; clientKeyFile?: string };
  fcm: { host: string; port: number; caFile: string; projectId: string; accessToken: string };
}

function check(file: unknown, path: string): SandboxFile {
  const f = file as Partial<SandboxFile> | null;
  const ok =
    typeof f?.apns?.address === 'string' && typeof f.apns.port === 'number' && typeof f.apns.keyFile === 'string' &&
    typeof f.apns.keyId === 'string' && typeof f.apns.teamId === 'string' && typeof f.apns.caFile === 'string' &&
    typeof f.fcm?.host === 'string' && typeof f.fcm.port === 'number' && typeof f.fcm.projectId === 'string' &&
    typeof f.fcm.accessToken === 'string' && typeof f.fcm.caFile === 'string';
  if (!ok) throw new Error(`${path} is not a sandbox settings file (start the sandbox: npx tsx apps/sandbox/src/main.ts)`);
  return f as SandboxFile;
}

/** Provider settings pointing at a running sandbox, from its sandbox.json. */
export async function loadSandboxSettings(stateDir: string): Promise<{ apns: ApnsSettings; fcm: FcmSettings }> {
  const path = join(stateDir, 'sandbox.json');
  const file = check(JSON.parse(await readFile(path, 'utf8')) as unknown, path);
  const [apnsCa, apnsKey, fcmCa] = await Promise.all([
    readFile(file.apns.caFile, 'utf8'),
    readFile(file.apns.keyFile, 'utf8'),
    readFile(file.fcm.caFile, 'utf8'),
  ]);
  return {
    apns: {
      address: file.apns.address,
      port: file.apns.port,
      production: false,
      auth: { kind: 'token', key: apnsKey, keyId: file.apns.keyId, teamId: file.apns.teamId },
      ca: apnsCa,
      defaultTopic: SANDBOX_DEFAULT_TOPIC,
      requestTimeoutMs: 5000,
    },
    fcm: {
      projectId: file.fcm.projectId,
      credential: { kind: 'access-token', accessToken: file.fcm.accessToken },
      endpoint: { host: file.fcm.host, port: file.fcm.port, ca: fcmCa },
      requestTimeoutMs: 10_000,
    },
  };
}

/** Certificate-auth APNs settings for the sandbox (its client certificate), if sandbox.json names one. */
export async function loadSandboxCertificateAuth(stateDir: string): Promise<ApnsSettings['auth'] | undefined> {
  const path = join(stateDir, 'sandbox.json');
  const file = check(JSON.parse(await readFile(path, 'utf8')) as unknown, path);
  if (file.apns.clientCertFile === undefined || file.apns.clientKeyFile === undefined) return undefined;
  const [cert, key] = await Promise.all([readFile(file.apns.clientCertFile, 'utf8'), readFile(file.apns.clientKeyFile, 'utf8')]);
  return { kind: 'certificate', cert, key };
}
