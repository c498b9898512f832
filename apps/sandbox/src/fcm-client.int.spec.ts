import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { SDK_VERSION } from 'firebase-admin/app';
import { createLogger } from '@herald/logging';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFcmProvider, loadSandboxSettings, type FcmSettings, type PushProvider } from '@herald/providers';
import { startSandbox, type FaultSpec, type RecordView, type Sandbox } from './index.ts';

const logger = createLogger({ service: 'fcm-int', level: 'silent' });
let stateDir: string;
let sandbox: Sandbox;
let settings: FcmSettings;
let provider: PushProvider;
let n = 0;

const control = async (method: string, path: string, body?: unknown): Promise<unknown> => {
  const res = await fetch(`${sandbox.settings.control.url}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return res.json();
};
const fault = (spec: Omit<FaultSpec, 'platform'>): Promise<unknown> => control('POST', '/faults', { platform: 'fcm', ...spec });
const recordsFor = async (token: string): Promise<RecordView[]> => (await control('GET', `/records?platform=fcm&token=${token}`)) as RecordView[];

function devicePush(over: Partial<DevicePush> = {}): DevicePush {
  n += 1;
  return {
    version: 1,
    pushId: derivePushId('job-fcm', `device-${n}`),
    jobId: 'job-fcm',
    deviceId: `device-${n}`,
    app: 'demo',
    platform: 'fcm',
    token: `fcm-token-${n}:APA91b${'x'.repeat(40)}`,
    userId: 'user-1',
    content: { title: 'Hello', body: 'World' },
    priority: 'high',
    acceptedAt: new Date().toISOString(),
    ...over,
  };
}

async function withProvider(over: Partial<FcmSettings>, use: (p: PushProvider) => Promise<void>): Promise<void> {
  const p = await createFcmProvider({ ...settings, ...over }, logger);
  try {
    await use(p);
  } finally {
    await p.close();
  }
}

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-fcm-'));
  sandbox = await startSandbox({ stateDir, logger });
  settings = (await loadSandboxSettings(stateDir)).fcm;
  provider = await createFcmProvider(settings, logger);
});
afterAll(async () => {
  await provider?.close();
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});
beforeEach(async () => {
  await control('DELETE', '/faults');
});

describe('FCM provider against the sandbox', () => {
  it('sends the v1 message firebase-admin serialises from Herald\'s message', async () => {
    const expiresAt = new Date(Date.now() + 3600_000 + 500).toISOString();
    const push = devicePush({
      content: { title: 'T', body: 'B', badge: 2, sound: 'default', threadId: 'th', imageUrl: 'https://img.example/p.png', data: { chat: '42' } },
      collapseKey: 'chat-42',
      expiresAt,
    });
    const result = await provider.send(push, {});
    const [rec] = await recordsFor(push.token);
    expect(rec?.status).toBe(200);
    expect(result).toEqual({ kind: 'delivered', providerMessageId: (rec?.response as { name: string }).name });
    expect(rec?.path).toBe('/v1/projects/herald-sandbox/messages:send');
    expect(rec?.headers['authorization']).toBe(`Bearer ${sandbox.settings.fcm.accessToken}`);
    expect(rec?.headers['content-type']).toMatch(/^application\/json/);
    // The client headers firebase-admin sends, with its own version (read when the provider starts).
    expect(rec?.headers['x-firebase-client']).toBe(`fire-admin-node/${SDK_VERSION}`);
    expect(rec?.headers['x-goog-api-client']).toBe(`gl-node/${process.versions.node} fire-admin/${SDK_VERSION}`);
    const expirationSeconds = String(Math.floor(Date.parse(expiresAt) / 1000));
    expect(rec?.body).toEqual({
      message: {
        token: push.token,
        notification: { title: 'T', body: 'B', image: 'https://img.example/p.png' },
        data: { chat: '42' },
        android: { priority: 'HIGH', ttl: '3600s', collapse_key: 'chat-42', notification: { sound: 'default', notification_count: 2, tag: 'chat-42' } },
        apns: {
          headers: { 'apns-priority': '10', 'apns-push-type': 'alert', 'apns-expiration': expirationSeconds, 'apns-collapse-id': 'chat-42' },
          payload: { aps: { alert: { title: 'T', body: 'B' }, badge: 2, sound: 'default', 'thread-id': 'th', 'mutable-content': 1 } },
        },
      },
    });
  });

  // A pusher gives its provider PostgreSQL's clock: the time to live counts from it, not from this host's (two hours off here).
  it("counts android.ttl from the clock it is given, not the host's", async () => {
    const dbNow = new Date(Date.now() - 7_200_000);
    const clocked = await createFcmProvider(settings, logger, () => dbNow);
    try {
      const push = devicePush({ expiresAt: new Date(dbNow.getTime() + 3_600_000).toISOString() });
      expect(await clocked.send(push, {})).toMatchObject({ kind: 'delivered' });
      const [rec] = await recordsFor(push.token);
      expect((rec?.body as { message: { android: { ttl: string } } }).message.android.ttl).toBe('3600s');
    } finally {
      await clocked.close();
    }
  });

  it('sends a background push as data-only with normal/5 priorities', async () => {
    const push = devicePush({ content: { contentAvailable: true, data: { sync: '1' } }, priority: 'normal' });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'delivered' });
    const [rec] = await recordsFor(push.token);
    expect(rec?.body).toEqual({
      message: {
        token: push.token,
        data: { sync: '1' },
        // No expiry: stored as long as FCM allows (4 weeks), and for iOS through FCM likewise.
        android: { priority: 'NORMAL', ttl: '2419200s' },
        apns: {
          headers: { 'apns-priority': '5', 'apns-push-type': 'background', 'apns-expiration': expect.stringMatching(/^\d{10}$/) as unknown },
          payload: { aps: { 'content-available': 1 } },
        },
      },
    });
  });

  it('an alert with only a badge reaches Android as a data message the sandbox takes without a warning; iOS keeps aps.badge', async () => {
    const push = devicePush({ content: { badge: 3 } });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'delivered' });
    const [rec] = await recordsFor(push.token);
    const message = (rec?.body as { message: Record<string, unknown> }).message;
    expect(message['notification']).toBeUndefined();
    expect(message['android']).toEqual({ priority: 'HIGH', ttl: '2419200s', data: { herald_badge: '3' } });
    expect(message['apns']).toMatchObject({ headers: { 'apns-priority': '10' }, payload: { aps: { badge: 3 } } });
    expect(rec?.warnings).toEqual([]);
  });

  it('a message over FCM\'s 4096 bytes in an android.data override is permanent before sending, as Google would answer it', async () => {
    const push = devicePush({ content: { title: 'big', fcm: { android: { data: { blob: 'x'.repeat(4100) } } } } });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^payload too large: FCM message/) as unknown });
    expect(await recordsFor(push.token)).toEqual([]);
  });

  it.each<[FaultSpec['error'], string, number]>([
    ['UNREGISTERED', 'dead-token', 404],
    ['INVALID_ARGUMENT', 'dead-token', 400],
    ['INTERNAL', 'transient', 500],
    ['SENDER_ID_MISMATCH', 'dead-token', 403], // unless none of the app's pushes goes through (app-ban.ts)
    ['THIRD_PARTY_AUTH_ERROR', 'permanent', 401],
  ])('reports %s as %s, in one attempt', async (error, kind, status) => {
    const push = devicePush();
    await fault({ token: push.token, error });
    expect(await provider.send(push, {})).toMatchObject({ kind });
    expect((await recordsFor(push.token)).map((r) => r.status)).toEqual([status]);
  });

  it("reports QUOTA_EXCEEDED without Retry-After as transient, not before a minute, and a device's own quota as the device's", async () => {
    const project = devicePush();
    await fault({ token: project.token, error: 'QUOTA_EXCEEDED', quota: 'message' });
    const answer = await provider.send(project, {});
    expect(answer).toMatchObject({ kind: 'transient', retryNotBeforeMs: 60_000 });
    expect(answer).not.toHaveProperty('retryAfterMs'); // nothing to pause the app for
    const device = devicePush();
    await fault({ token: device.token, error: 'QUOTA_EXCEEDED', quota: 'device' });
    const own = await provider.send(device, {});
    // The limiter slows that device's push only (throttle-scope.spec.ts).
    expect(own).toMatchObject({ kind: 'transient', retryNotBeforeMs: 60_000, reason: expect.stringMatching(/^QUOTA_EXCEEDED \(device-message-rate-exceeded\)/) });
  });

  it('reports QUOTA_EXCEEDED as transient with the Retry-After FCM gave', async () => {
    const push = devicePush();
    await fault({ token: push.token, error: 'QUOTA_EXCEEDED', retryAfterSeconds: 7 });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'transient', retryAfterMs: 7000 });
  });

  it('reports UNAVAILABLE at once with its Retry-After, without firebase-admin\'s own retries', async () => {
    const push = devicePush();
    await fault({ token: push.token, error: 'UNAVAILABLE', retryAfterSeconds: 30 });
    const started = Date.now();
    expect(await provider.send(push, {})).toEqual({ kind: 'transient', reason: 'UNAVAILABLE: HTTP 503', httpStatus: 503, retryAfterMs: 30_000 });
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await recordsFor(push.token)).map((r) => r.status)).toEqual([503]);
  });

  it('answers delivered again once a `times` fault is used up', async () => {
    const push = devicePush({ content: { title: 'x' } });
    await fault({ token: push.token, error: 'INVALID_ARGUMENT', times: 1 });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'dead-token' });
    expect(await provider.send(push, {})).toMatchObject({ kind: 'delivered' });
  });

  it('reports a hanging FCM as transient after requestTimeoutMs, in one attempt', async () => {
    await withProvider({ requestTimeoutMs: 300 }, async (slow) => {
      const push = devicePush();
      await fault({ token: push.token, delayMs: 1500 });
      const started = Date.now();
      expect(await slow.send(push, {})).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/^timeout/) });
      expect(Date.now() - started).toBeLessThan(1200);
      await new Promise((r) => setTimeout(r, 1500));
      const recs = await recordsFor(push.token);
      expect(recs.map((r) => ({ status: r.status, clientClosed: r.clientClosed }))).toEqual([{ status: 200, clientClosed: true }]);
    });
  });

  it('retries a refused access token once with a new one (Google: 401 for a missing, invalid or expired token); refused again, it is permanent', async () => {
    await withProvider({ credential: { kind: 'access-token', accessToken: 'ya29.wrong' } }, async (bad) => {
      expect(await bad.send(devicePush(), {})).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/^UNAUTHENTICATED: .*the retry fetches a new one$/) });
      expect(await bad.send(devicePush(), {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^UNAUTHENTICATED\b/) });
    });
  });

  it('reports an unknown project as permanent', async () => {
    await withProvider({ projectId: 'someone-elses' }, async (other) => {
      expect(await other.send(devicePush(), {})).toMatchObject({ kind: 'permanent' });
    });
  });

  it('reports a refused connection as transient', async () => {
    await withProvider({ endpoint: { host: '127.0.0.1', port: 1, ca: settings.endpoint?.ca } as FcmSettings['endpoint'] }, async (down) => {
      expect(await down.send(devicePush(), {})).toMatchObject({ kind: 'transient' });
    });
  });

  it('replaces a connection FCM closed: the next send opens a new one and is delivered', async () => {
    const first = devicePush();
    expect(await provider.send(first, {})).toMatchObject({ kind: 'delivered' });
    await sandbox.close();
    sandbox = await startSandbox({ stateDir, logger, fcmPort: sandbox.fcmPort });
    const next = devicePush();
    expect(await provider.send(next, {})).toMatchObject({ kind: 'delivered' });
    expect((await recordsFor(next.token)).map((r) => r.status)).toEqual([200]);
  });

  it('sends many pushes concurrently (throughput printed)', async () => {
    const count = 3000;
    const pushes = Array.from({ length: count }, () => devicePush());
    const started = performance.now();
    const results = await Promise.all(pushes.map((p) => provider.send(p, {})));
    const seconds = (performance.now() - started) / 1000;
    expect(results.filter((r) => r.kind === 'delivered')).toHaveLength(count);
    console.log(`FCM provider → sandbox: ${count} pushes in ${seconds.toFixed(2)} s = ${Math.round(count / seconds)} pushes/s`);
  });
});
