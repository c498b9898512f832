/**
 * The peer of `npm run bench:peer`, in a process of its own so /proc shows its CPU apart: the
 * `@parse/push-adapter` Parse Server uses, sending as Parse Server calls it —
 * `adapter.send(data, installations)` with batches of installations, several calls in flight.
 * APNs (@parse/node-apn) goes to the sandbox's address with its CA, as Herald's own provider does;
 * FCM (firebase-admin, HTTP/2 multicast) gets a credential that hands out the sandbox's access token
 * (as Herald's provider does for the sandbox) and its `http2.connect('https://fcm.googleapis.com')`
 * is pointed at the sandbox: firebase-admin opens that session itself per multicast call and takes
 * no agent or endpoint for it.
 *
 * Started with PEER_SANDBOX_STATE_DIR and PEER_TOKENS_FILE (JSON { apns: string[], fcm: string[] });
 * over IPC it takes { kind: 'send', count, batch, inFlight } and answers { kind: 'sent', ok, failed, ms }.
 */
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { loadSandboxSettings } from '@herald/providers';

interface Installation {
  deviceType: 'ios' | 'android';
  deviceToken: string;
  appIdentifier?: string;
}
interface SendOutcome {
  transmitted?: boolean;
}
interface PushAdapter {
  send(data: { data: Record<string, unknown> }, installations: Installation[]): Promise<SendOutcome[] | undefined>;
}
export interface SendCommand {
  kind: 'send';
  /** Send to the first `count` installations (APNs and FCM alternating). */
  count: number;
  batch: number;
  inFlight: number;
}
export interface SentReport {
  kind: 'sent';
  ok: number;
  failed: number;
  ms: number;
}

const APNS_TOPIC = 'com.herald.demo';
const FCM_HOST = 'https://fcm.googleapis.com';

const stateDir = process.env['PEER_SANDBOX_STATE_DIR'];
const tokensFile = process.env['PEER_TOKENS_FILE'];
if (stateDir === undefined || tokensFile === undefined) throw new Error('PEER_SANDBOX_STATE_DIR and PEER_TOKENS_FILE are required');
const { apns, fcm } = await loadSandboxSettings(stateDir);
const endpoint = fcm.endpoint;
if (endpoint === undefined || apns.auth.kind !== 'token' || fcm.credential.kind !== 'access-token') throw new Error('unexpected sandbox settings');
const accessToken = fcm.credential.accessToken;

// firebase-admin's HTTP/2 transport: redirect its sessions to the sandbox, trusting the sandbox's CA.
const connect = http2.connect.bind(http2) as (authority: string, options?: http2.SecureClientSessionOptions) => http2.ClientHttp2Session;
Object.assign(http2, {
  connect: (authority: string | URL, options?: http2.SecureClientSessionOptions) =>
    String(authority).startsWith(FCM_HOST)
      ? connect(`https://${endpoint.host}:${endpoint.port}`, { ...options, ca: endpoint.ca })
      : connect(String(authority), options),
});

// The adapter's own copy of firebase-admin (a dependency of @parse/push-adapter): its default app,
// initialised first with a credential that hands out the sandbox's token, is the one FCM.js picks up.
const require = createRequire(import.meta.url);
const adapterMain = require.resolve('@parse/push-adapter');
const adapterRequire = createRequire(adapterMain);
const { initializeApp } = adapterRequire('firebase-admin/app') as {
  initializeApp(options: { credential: { getAccessToken(): Promise<{ access_token: string; expires_in: number }> }; projectId: string }): unknown;
};
initializeApp({ credential: { getAccessToken: () => Promise.resolve({ access_token: accessToken, expires_in: 3600 }) }, projectId: fcm.projectId });
(adapterRequire('npmlog') as { level: string }).level = 'warn';

const { ParsePushAdapter } = (await import(pathToFileURL(adapterMain).href)) as { ParsePushAdapter: new (config: object) => PushAdapter };
const adapter = new ParsePushAdapter({
  ios: {
    token: { key: apns.auth.key, keyId: apns.auth.keyId, teamId: apns.auth.teamId },
    topic: APNS_TOPIC,
    production: false,
    address: apns.address,
    port: apns.port,
    ...(apns.ca !== undefined ? { ca: [apns.ca] } : {}),
  },
  // Only its presence matters: the default app above is used, so no service account is read.
  android: { firebaseServiceAccount: { project_id: fcm.projectId } },
});

const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as { apns: string[]; fcm: string[] };
const installations: Installation[] = [];
for (let i = 0; i < Math.max(tokens.apns.length, tokens.fcm.length); i++) {
  const a = tokens.apns[i];
  const f = tokens.fcm[i];
  if (a !== undefined) installations.push({ deviceType: 'ios', deviceToken: a, appIdentifier: APNS_TOPIC });
  if (f !== undefined) installations.push({ deviceType: 'android', deviceToken: f });
}

async function sendAll(c: SendCommand): Promise<SentReport> {
  const started = performance.now();
  const targets = installations.slice(0, c.count);
  let next = 0;
  let ok = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (next < targets.length) {
      const batch = targets.slice(next, next + c.batch);
      next += c.batch;
      // A push as Parse Server hands it to the adapter: { data: { alert, title, … } } per call.
      const results = (await adapter.send({ data: { alert: 'bench', title: 'bench', t: String(Date.now()) } }, batch)) ?? [];
      for (const r of results) {
        if (r.transmitted === true) ok++;
        else failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: c.inFlight }, worker));
  return { kind: 'sent', ok, failed, ms: performance.now() - started };
}

process.on('message', (m: SendCommand | { kind: 'exit' }) => {
  if (m.kind === 'exit') process.exit(0);
  sendAll(m).then(
    (report) => process.send?.(report),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
process.send?.({ kind: 'ready', installations: installations.length });
