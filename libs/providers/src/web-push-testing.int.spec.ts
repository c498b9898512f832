import { spawn, type ChildProcess } from 'node:child_process';
import { createECDH } from 'node:crypto';
import { createRequire } from 'node:module';
import net from 'node:net';
import { dirname, join } from 'node:path';
import tls from 'node:tls';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushProvider } from './push-provider.ts';
import { createWebPushProvider } from './web-push-provider.ts';
import type { VapidKeyPair } from './web-settings.ts';
import { generateVapidKeys } from './web-vapid-keys.ts';

/**
 * A second judge besides Herald's own sandbox: the `web-push-testing` npm package (a maintained
 * Web Push test server: VAPID verification with jsonwebtoken, aes128gcm decryption with
 * http_ece). It serves plain HTTP, and Herald (like browsers' push services) speaks only HTTPS,
 * so the test puts a TLS terminator in front of it; nothing else stands between the two.
 */
const logger = createLogger({ service: 'web-push-testing', level: 'silent' });
let server: ChildProcess;
let terminator: tls.Server;
let httpPort: number;
let tlsPort: number;
let ca: string;
let provider: PushProvider;
// Herald's own generator: raw ECDH drops a private scalar's leading zero byte (one key in 256).
const keys: VapidKeyPair = await generateVapidKeys();

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

async function api<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`http://localhost:${httpPort}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`web-push-testing ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

type Sub = { endpoint: string; keys: { p256dh: string; auth: string }; clientHash: string };
async function subscribe(applicationServerKey = keys.publicKey): Promise<Sub> {
  const { data } = await api<{ data: Sub }>('/subscribe', { userVisibleOnly: 'true', applicationServerKey });
  // The server names itself http://localhost:<port>; Herald reaches it through the TLS terminator.
  return { ...data, endpoint: data.endpoint.replace(`http://localhost:${httpPort}`, `https://localhost:${tlsPort}`) };
}

const push = (sub: Sub, over: Partial<DevicePush> = {}): DevicePush => ({
  version: 1,
  pushId: derivePushId('job-wpt', sub.clientHash),
  jobId: 'job-wpt',
  deviceId: sub.clientHash,
  app: 'demo',
  platform: 'web',
  token: sub.endpoint,
  webKeys: sub.keys,
  userId: 'u1',
  content: { title: 'Second judge', body: 'decrypted elsewhere', data: { k: 'v' } },
  priority: 'normal',
  collapseKey: 'judge',
  acceptedAt: new Date().toISOString(),
  ...over,
});

beforeAll(async () => {
  httpPort = await freePort();
  const script = join(dirname(createRequire(import.meta.url).resolve('web-push-testing/package.json')), 'src', 'bin', 'server.js');
  server = spawn(process.execPath, [script, String(httpPort)], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    server.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('Server running') && resolve());
    server.once('exit', (code) => reject(new Error(`web-push-testing exited with ${code}`)));
  });
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }] });
  ca = pems.cert;
  terminator = tls.createServer({ cert: pems.cert, key: pems.private }, (client) => {
    const upstream = net.connect(httpPort, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => terminator.listen(0, '127.0.0.1', resolve));
  tlsPort = (terminator.address() as net.AddressInfo).port;
  provider = await createWebPushProvider({ vapid: { subject: 'mailto:ops@example.com', current: keys }, trusted: [{ host: 'localhost', port: tlsPort, ca }], requestTimeoutMs: 5000 }, logger);
}, 30_000);

afterAll(async () => {
  await provider?.close();
  terminator?.close();
  server?.kill('SIGTERM');
});

describe('the Web Push provider against web-push-testing', () => {
  it('is accepted (VAPID verified against the subscription\'s applicationServerKey) and decrypts to the JSON Herald sent', async () => {
    const sub = await subscribe();
    const p = push(sub);
    expect(await provider.send(p, {})).toMatchObject({ kind: 'delivered' });
    const { data } = await api<{ data: { messages: string[] } }>('/get-notifications', { clientHash: sub.clientHash });
    expect(data.messages.map((m) => JSON.parse(m) as unknown)).toEqual([
      { title: 'Second judge', body: 'decrypted elsewhere', tag: 'judge', data: { k: 'v' }, jobId: 'job-wpt', pushId: p.pushId, sentAt: expect.any(String) },
    ]);
  });

  it('an expired subscription answers 410: a dead token', async () => {
    const sub = await subscribe();
    await fetch(`http://localhost:${httpPort}/expire-subscription/${sub.clientHash}`, { method: 'POST' });
    expect(await provider.send(push(sub), {})).toEqual({ kind: 'dead-token', reason: 'Gone' });
  });

  it('a subscription made for another application server key is refused (permanent, nothing delivered)', async () => {
    const other = createECDH('prime256v1');
    other.generateKeys();
    const sub = await subscribe(other.getPublicKey().toString('base64url'));
    expect(await provider.send(push(sub), {})).toMatchObject({ kind: 'permanent' });
    const { data } = await api<{ data: { messages: string[] } }>('/get-notifications', { clientHash: sub.clientHash });
    expect(data.messages).toEqual([]);
  });

  it('a subscription whose p256dh is no point on the curve (stored before the doors checked it) is a dead token, unless the app fails', async () => {
    const sub = await subscribe();
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url');
    expect(await provider.send(push(sub, { webKeys: { ...sub.keys, p256dh: offCurve } }), {})).toMatchObject({
      kind: 'dead-token',
      reason: expect.stringMatching(/^subscription keys unusable: /),
      unlessAppFails: true,
    });
  });
});
