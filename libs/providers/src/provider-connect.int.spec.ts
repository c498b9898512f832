import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createLogger } from '@herald/logging';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApnsProvider } from './apns-provider.ts';
import { createFcmProvider } from './fcm-provider.ts';
import type { ApnsSettings, FcmSettings } from './settings.ts';
import { testPush } from './test-pushes.ts';

const logger = createLogger({ service: 'provider-connect', level: 'silent' });
const p8 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const TIMEOUT_MS = 400;

/** A provider endpoint on 127.0.0.1 that accepts TCP connections (counting them) and never answers TLS. */
let silent: Server;
let connections = 0;
/** The first line each connection sent (a proxy's view: `CONNECT host:port HTTP/1.1`). */
const firstLines: string[] = [];
const sockets: Socket[] = [];
/** A port nothing listens on. */
let closedPort: number;
beforeAll(async () => {
  silent = createServer((s) => {
    connections++;
    sockets.push(s);
    s.once('data', (d: Buffer) => firstLines.push(d.toString('latin1').split('\r\n')[0] ?? ''));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

const silentPort = (): number => (silent.address() as { port: number }).port;
const apns = (port: number): ApnsSettings => ({
  address: '127.0.0.1',
  port,
  production: false,
  auth: { kind: 'token', key: p8, keyId: 'ABC123DEFG', teamId: 'DEF123GHIJ' },
  defaultTopic: 'com.example.app',
  requestTimeoutMs: TIMEOUT_MS,
});
const fcm = (port: number): FcmSettings => ({
  projectId: 'herald-test',
  credential: { kind: 'access-token', accessToken: 'token' },
  endpoint: { host: '127.0.0.1', port },
  requestTimeoutMs: TIMEOUT_MS,
});

describe('FCM provider with a service account', () => {
  // Google's token URL is fixed, so the silent endpoint stands in as the egress proxy that both
  // the token fetch and the FCM session go through: it accepts CONNECT and never answers (the
  // tunnel's own deadline is 10 s).
  it('is made within the request timeout when its token fetch and its connection hang', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const account = {
      type: 'service_account',
      project_id: 'herald-test',
      client_email: 'pusher@herald-test.iam.gserviceaccount.com',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
    firstLines.length = 0;
    const started = Date.now();
    const provider = await createFcmProvider(
      {
        ...fcm(443),
        endpoint: { host: 'fcm.googleapis.com', port: 443 },
        credential: { kind: 'service-account', json: JSON.stringify(account) },
        proxy: { host: '127.0.0.1', port: silentPort() },
      },
      logger,
    );
    try {
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
      // Both go through the proxy: the FCM session's tunnel and the token fetch's (firebase-admin
      // dropped the credential's agent, firebase/firebase-admin-node#2960; patched). The provider is
      // made without waiting for either, so on a loaded machine the token fetch's tunnel may reach
      // the proxy after it (clean-clone CI, 2026-11-29 15:17: only the FCM session's line yet).
      await waitFor('both tunnels at the proxy', async () => firstLines.length >= 2, { timeoutMs: 5_000 });
      expect(firstLines.sort()).toEqual(['CONNECT fcm.googleapis.com:443 HTTP/1.1', 'CONNECT oauth2.googleapis.com:443 HTTP/1.1']);
    } finally {
      await provider.close();
    }
  });
});

// The pusher makes an app's provider before it takes rate budget (pusher.ts), so a provider that
// is connected when made holds no budget while its first connection opens: a backlog meeting a
// freshly started pusher goes out at the limit, not bunched behind the handshake.
describe.each([
  ['APNs', () => createApnsProvider(apns(silentPort()), logger), () => createApnsProvider(apns(closedPort), logger)],
  ['FCM', () => createFcmProvider(fcm(silentPort()), logger), () => createFcmProvider(fcm(closedPort), logger)],
] as const)('%s provider', (_name, makeSilent, makeUnreachable) => {
  it('opens its connection when it is made, before any push, and waits at most the request timeout for it', async () => {
    const before = connections;
    const started = Date.now();
    const provider = await makeSilent();
    try {
      expect(connections).toBeGreaterThan(before);
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
    } finally {
      await provider.close();
    }
  });

  it('is still made when the endpoint refuses connections, and its send reports that as transient', async () => {
    const provider = await makeUnreachable();
    try {
      const push = testPush(_name === 'APNs' ? 'apns' : 'fcm');
      expect(await provider.send(push, { apnsTopic: 'com.example.app' })).toMatchObject({ kind: 'transient' });
    } finally {
      await provider.close();
    }
  });
});
