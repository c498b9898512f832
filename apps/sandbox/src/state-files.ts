import { createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from 'selfsigned';

/** What the sandbox needs at run time; created once in the state dir and reused on restart. */
export interface SandboxIdentity {
  tlsCertFile: string;
  tlsKeyFile: string;
  tlsCert: string;
  tlsKey: string;
  /** A client certificate signed by the sandbox CA, for APNs certificate-based auth. */
  clientCertFile: string;
  clientKeyFile: string;
  /** APNs token-auth key (`AuthKey_<KEYID>.p8`, PKCS#8 EC P-256). */
  apnsKeyFile: string;
  apnsPublicKey: KeyObject;
  keyId: string;
  teamId: string;
  /** The OAuth access token the FCM sandbox accepts. */
  fcmAccessToken: string;
}

const TLS_CERT = 'tls-cert.pem';
const TLS_KEY = 'tls-key.pem';
const CLIENT_CERT = 'apns-client-cert.pem';
const CLIENT_KEY = 'apns-client-key.pem';
const IDENTITY = 'identity.json';

const appleId = (): string => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return [...randomBytes(10)].map((b) => alphabet[b % alphabet.length]).join('');
};

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * A self-signed certificate for localhost and 127.0.0.1 (SAN) that clients trust as their CA,
 * and a client certificate it signed (EC, so node-apn accepts it without Apple's push OIDs).
 */
async function ensureTls(stateDir: string): Promise<{ cert: string; key: string }> {
  const names = [TLS_CERT, TLS_KEY, CLIENT_CERT, CLIENT_KEY];
  const [cert, key, clientCert, clientKey] = await Promise.all(names.map((n) => readIfExists(join(stateDir, n))));
  if (cert !== undefined && key !== undefined && clientCert !== undefined && clientKey !== undefined) return { cert, key };
  const notBeforeDate = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + 10 * 365 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
    clientCertificate: { keyType: 'ec', curve: 'P-256', algorithm: 'sha256', cn: 'Apple Push Services: com.herald.sandbox' },
  });
  if (pems.clientcert === undefined || pems.clientprivate === undefined) throw new Error('selfsigned did not return a client certificate');
  await writeFile(join(stateDir, TLS_CERT), pems.cert);
  await writeFile(join(stateDir, TLS_KEY), pems.private, { mode: 0o600 });
  await writeFile(join(stateDir, CLIENT_CERT), pems.clientcert);
  await writeFile(join(stateDir, CLIENT_KEY), pems.clientprivate, { mode: 0o600 });
  return { cert: pems.cert, key: pems.private };
}

interface StoredIdentity {
  keyId: string;
  teamId: string;
  fcmAccessToken: string;
}

async function ensureIds(stateDir: string): Promise<StoredIdentity> {
  const raw = await readIfExists(join(stateDir, IDENTITY));
  if (raw !== undefined) return JSON.parse(raw) as StoredIdentity;
  const existingKey = (await readdir(stateDir)).find((f) => /^AuthKey_[A-Z0-9]+\.p8$/.test(f));
  const ids: StoredIdentity = {
    keyId: existingKey?.slice('AuthKey_'.length, -'.p8'.length) ?? appleId(),
    teamId: appleId(),
    fcmAccessToken: `ya29.sandbox-${randomBytes(24).toString('base64url')}`,
  };
  await writeFile(join(stateDir, IDENTITY), `${JSON.stringify(ids, null, 2)}\n`, { mode: 0o600 });
  return ids;
}

async function ensureApnsKey(path: string): Promise<KeyObject> {
  let pem = await readIfExists(path);
  if (pem === undefined) {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await writeFile(path, pem, { mode: 0o600 });
  }
  return createPublicKey(pem);
}

/** Create whatever is missing in `stateDir` (certificate, .p8 key, ids, access token); reuse the rest. */
export async function ensureIdentity(stateDir: string): Promise<SandboxIdentity> {
  await mkdir(stateDir, { recursive: true });
  const tls = await ensureTls(stateDir);
  const ids = await ensureIds(stateDir);
  const apnsKeyFile = join(stateDir, `AuthKey_${ids.keyId}.p8`);
  const apnsPublicKey = await ensureApnsKey(apnsKeyFile);
  return {
    tlsCertFile: join(stateDir, TLS_CERT),
    tlsKeyFile: join(stateDir, TLS_KEY),
    tlsCert: tls.cert,
    tlsKey: tls.key,
    clientCertFile: join(stateDir, CLIENT_CERT),
    clientKeyFile: join(stateDir, CLIENT_KEY),
    apnsKeyFile,
    apnsPublicKey,
    ...ids,
  };
}
