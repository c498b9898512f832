import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';
import { createAppCredentialStore, createSecretBox } from '@herald/db';
import { appProviderFactory } from '@herald/delivery';
import { createLogger } from '@herald/logging';
import { createApnsProvider, createFcmProvider, loadSandboxSettings, type ApnsSettings, type FcmSettings, type PushProvider } from '@herald/providers';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RecordView, type Sandbox } from './index.ts';

/**
 * Provider connection settings against the real clients: an APNs and an FCM send with a proxy
 * go through a CONNECT proxy (127.0.0.1, written here) to the sandbox and are delivered; the CA
 * in the settings is what lets TLS succeed; per-app settings stored (sealed) in PostgreSQL are
 * what the pusher's per-app provider uses.
 */
const logger = createLogger({ service: 'proxy-int', level: 'silent' });
const TOPIC = 'com.example.herald';

interface TestProxy {
  port: number;
  /** Every CONNECT: its target and its Proxy-Authorization header. */
  connects: { target: string; auth: string | undefined }[];
  close(): Promise<void>;
}

/** An HTTP CONNECT proxy on 127.0.0.1 that tunnels only to 127.0.0.1 and, with `user`, demands Basic auth. */
async function startProxy(user?: { name: string; password: string }): Promise<TestProxy> {
  const connects: TestProxy['connects'] = [];
  const open = new Set<Socket>();
  const expected = user && `Basic ${Buffer.from(`${user.name}:${user.password}`).toString('base64')}`;
  const server: Server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    connects.push({ target, auth: req.headers['proxy-authorization'] });
    open.add(client);
    client.on('error', () => undefined);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    if (expected !== undefined && req.headers['proxy-authorization'] !== expected) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="spec"\r\n\r\n');
      return;
    }
    if (host !== '127.0.0.1') return void client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    open.add(upstream);
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connects,
    close: () => new Promise<void>((resolve) => {
      for (const s of open) s.destroy();
      server.close(() => resolve());
    }),
  };
}

let stateDir: string;
let sandbox: Sandbox;
let apns: ApnsSettings;
let fcm: FcmSettings;
let proxy: TestProxy;
let authProxy: TestProxy;
let n = 0;
const opened: PushProvider[] = [];

const recordsFor = async (platform: Platform, token: string): Promise<RecordView[]> =>
  (await (await fetch(`${sandbox.settings.control.url}/records?platform=${platform}&token=${encodeURIComponent(token)}`)).json()) as RecordView[];

function devicePush(platform: Platform): DevicePush {
  n += 1;
  const token = platform === 'apns' ? `${n.toString(16).padStart(8, '0')}${'cd'.repeat(28)}` : `proxy-token-${n}:APA91b${'y'.repeat(40)}`;
  return {
    version: 1,
    pushId: derivePushId('job-proxy', `device-${n}`),
    jobId: 'job-proxy',
    deviceId: `device-${n}`,
    app: 'demo',
    platform,
    token,
    userId: 'user-1',
    content: { title: 'Through', body: 'the proxy' },
    priority: 'high',
    acceptedAt: new Date().toISOString(),
  };
}

async function provider(p: Promise<PushProvider>): Promise<PushProvider> {
  const built = await p;
  opened.push(built);
  return built;
}

const sandboxTarget = (platform: Platform): string =>
  platform === 'apns' ? `${apns.address}:${apns.port}` : `${fcm.endpoint?.host ?? ''}:${fcm.endpoint?.port ?? 0}`;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-proxy-'));
  sandbox = await startSandbox({ stateDir, logger });
  ({ apns, fcm } = await loadSandboxSettings(stateDir));
  proxy = await startProxy();
  authProxy = await startProxy({ name: 'herald', password: 'p@ss:word' });
});
afterAll(async () => {
  // node-apn 8.1.0's shutdown never called back once an error had destroyed its session (here the
  // refused tunnel and the failed TLS handshake); patches/@parse+node-apn+8.1.0.patch fixes that,
  // so every close must return.
  await Promise.all(opened.map((p) => p.close()));
  await proxy?.close();
  await authProxy?.close();
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});
beforeEach(() => {
  proxy.connects.length = 0;
  authProxy.connects.length = 0;
});

describe('provider connection settings against the sandbox', () => {
  it('sends an APNs push through the proxy: one CONNECT to the sandbox, delivered', async () => {
    const p = await provider(createApnsProvider({ ...apns, proxy: { host: '127.0.0.1', port: proxy.port } }, logger));
    const push = devicePush('apns');
    expect(await p.send(push, { apnsTopic: TOPIC })).toMatchObject({ kind: 'delivered' });
    expect(proxy.connects).toEqual([{ target: sandboxTarget('apns'), auth: undefined }]);
    expect((await recordsFor('apns', push.token)).map((r) => r.status)).toEqual([200]);
  });

  it('sends an FCM push through the proxy: one CONNECT to the sandbox, delivered', async () => {
    const p = await provider(createFcmProvider({ ...fcm, proxy: { host: '127.0.0.1', port: proxy.port } }, logger));
    const push = devicePush('fcm');
    expect(await p.send(push, {})).toMatchObject({ kind: 'delivered' });
    expect(proxy.connects).toEqual([{ target: sandboxTarget('fcm'), auth: undefined }]);
    expect((await recordsFor('fcm', push.token)).map((r) => r.status)).toEqual([200]);
  });

  it('authenticates to the proxy with the URL\'s user and password, and a wrong password is a transient failure', async () => {
    const good = { host: '127.0.0.1', port: authProxy.port, username: 'herald', password: 'p@ss:word' };
    const basic = `Basic ${Buffer.from('herald:p@ss:word').toString('base64')}`;
    const a = await provider(createApnsProvider({ ...apns, proxy: good }, logger));
    const f = await provider(createFcmProvider({ ...fcm, proxy: good }, logger));
    expect(await a.send(devicePush('apns'), { apnsTopic: TOPIC })).toMatchObject({ kind: 'delivered' });
    expect(await f.send(devicePush('fcm'), {})).toMatchObject({ kind: 'delivered' });
    expect(authProxy.connects).toEqual([
      { target: sandboxTarget('apns'), auth: basic },
      { target: sandboxTarget('fcm'), auth: basic },
    ]);
    const bad = { ...good, password: 'wrong' };
    const fcmPush = devicePush('fcm');
    const refused = await provider(createFcmProvider({ ...fcm, proxy: bad }, logger));
    expect(await refused.send(fcmPush, {})).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/407/) });
    const apnsRefused = await provider(createApnsProvider({ ...apns, proxy: bad }, logger));
    expect(await apnsRefused.send(devicePush('apns'), { apnsTopic: TOPIC })).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/407/) });
    expect(await recordsFor('fcm', fcmPush.token)).toEqual([]);
  });

  it('needs the CA from the settings for TLS through the proxy: without it the send fails as transient (TLS) and nothing arrives', async () => {
    const apnsWithoutCa: ApnsSettings = { ...apns };
    delete apnsWithoutCa.ca;
    const fcmWithoutCa: FcmSettings = { ...fcm, endpoint: { host: fcm.endpoint?.host ?? '', port: fcm.endpoint?.port ?? 0 } };
    const via = { proxy: { host: '127.0.0.1', port: proxy.port } };
    const apnsPush = devicePush('apns');
    const fcmPush = devicePush('fcm');
    const a = await provider(createApnsProvider({ ...apnsWithoutCa, ...via }, logger));
    const f = await provider(createFcmProvider({ ...fcmWithoutCa, ...via }, logger));
    const tlsFailure = { kind: 'transient', reason: expect.stringMatching(/certificate/i) };
    expect(await a.send(apnsPush, { apnsTopic: TOPIC })).toMatchObject(tlsFailure);
    expect(await f.send(fcmPush, {})).toMatchObject(tlsFailure);
    // Each provider connects when it is made (that TLS fails too), then again for its send.
    expect(proxy.connects.map((c) => c.target)).toEqual([sandboxTarget('apns'), sandboxTarget('fcm'), sandboxTarget('apns'), sandboxTarget('fcm')]);
    expect(await recordsFor('apns', apnsPush.token)).toEqual([]);
    expect(await recordsFor('fcm', fcmPush.token)).toEqual([]);
  });

  describe('per app, stored with its credentials', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase('proxy_int');
    });
    afterAll(() => t?.drop());

    it('sends an app\'s pushes through the proxy in its connection settings (read back from PostgreSQL, proxy URL sealed)', async () => {
      const store = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
      const apnsKey = apns.auth.kind === 'token' ? apns.auth : undefined;
      if (apnsKey === undefined || fcm.credential.kind !== 'access-token') throw new Error('the sandbox settings changed shape');
      const proxyUrl = `http://herald:${encodeURIComponent('p@ss:word')}@127.0.0.1:${authProxy.port}`;
      const app = await store.create({
        id: 'proxied',
        enabled: true,
        apns: { auth: 'token', keyPem: apnsKey.key, keyId: apnsKey.keyId, teamId: apnsKey.teamId, endpoint: 'local' },
        fcm: { auth: 'access-token', accessToken: fcm.credential.accessToken, projectId: fcm.projectId, endpoint: 'local' },
        apnsConnection: { proxyUrl },
        fcmConnection: { proxyUrl },
      });
      const sealed = await t.db.kysely.selectFrom('apps').select(['apns_proxy_secret', 'fcm_proxy_secret']).where('id', '=', 'proxied').executeTakeFirstOrThrow();
      expect(`${sealed.apns_proxy_secret}${sealed.fcm_proxy_secret}`).not.toContain('127.0.0.1');
      const build = (platform: Platform) => appProviderFactory({ platform, credentials: store, sandboxStateDir: stateDir, requestTimeoutMs: 5000, logger });
      const a = await provider(build('apns')(app));
      const f = await provider(build('fcm')(app));
      const [apnsPush, fcmPush] = [devicePush('apns'), devicePush('fcm')];
      expect(await a.send(apnsPush, { apnsTopic: TOPIC })).toMatchObject({ kind: 'delivered' });
      expect(await f.send(fcmPush, {})).toMatchObject({ kind: 'delivered' });
      expect(authProxy.connects.map((c) => c.target)).toEqual([sandboxTarget('apns'), sandboxTarget('fcm')]);
      expect((await recordsFor('apns', apnsPush.token)).length + (await recordsFor('fcm', fcmPush.token)).length).toBe(2);
    });
  });
});
