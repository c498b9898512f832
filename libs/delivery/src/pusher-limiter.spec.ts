import { randomUUID } from 'node:crypto';
import type { DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { classifyFcmError, type SendResult } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { describe, expect, it } from 'vitest';
import { createPusherHandler, SENT_BEFORE_HEADER, type PusherDeps } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';
import { singleProvider } from './provider-pool.ts';
import { createRateLimiter, MemoryRateLimitStore } from '@herald/rate-limiter';
import { AppAdminError } from '@herald/db';

const logger = createLogger({ service: 'pusher-limiter-spec', level: 'silent', format: 'json' });

function message(app = 'demo'): { push: DevicePush; inbound: InboundMessage } {
  const push: DevicePush = { version: 1, pushId: randomUUID(), jobId: 'j', deviceId: '1', app, platform: 'apns', token: 'a'.repeat(64),
    userId: 'u', content: { title: 'Hi' }, priority: 'high', acceptedAt: new Date().toISOString() };
  return { push, inbound: { body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: 'push.apns.send', redelivered: false, attempt: 1, queue: 'push.apns.send' } };
}

/** A pusher whose provider answers `answer`, with an in-memory ledger that records releases. */
function pusher(limiter: PusherDeps['limiter'], answer: SendResult, leaseMs = 30_000, cancelled?: PusherDeps['cancelled'], extra: Partial<PusherDeps> = {}) {
  const sent: string[] = [];
  const released: string[] = [];
  const completed: string[] = [];
  const completions: Array<{ pushId: string; outcome: string; status?: { outcome: string } }> = [];
  const shutdown = new AbortController();
  const signal = shutdown.signal;
  const deps: PusherDeps = {
    platform: 'apns',
    providers: singleProvider({ platform: 'apns', send: async (push) => (sent.push(push.pushId), answer), close: async () => undefined }),
    ledger: {
      claimLive: async (pushes) => new Map(pushes.map((p) => [p.pushId, 'claimed' as const])),
      complete: async (entries) => void (completed.push(...entries.map((e) => e.pushId)), completions.push(...entries)),
      release: async (ids) => void released.push(...ids),
      renew: async (ids) => ids.length,
    },
    apps: { get: async (id) => ({ id, apnsTopic: 'com.herald.demo', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date() }) },
    publisher: { publish: async () => undefined, publishMany: async () => undefined },
    metrics: createPusherMetrics(new Registry()),
    logger,
    owner: 'spec',
    leaseMs,
    ...(limiter !== undefined && { limiter }),
    ...(cancelled !== undefined && { cancelled }),
    signal,
    ...extra,
  };
  return { handle: createPusherHandler(deps), sent, released, completed, completions, signal, shutdown };
}

/** A job-status recorder that keeps what was noted apart from the ledger (by outcome). */
const recorderInto = (noted: string[]): NonNullable<PusherDeps['outcomes']> => ({
  note: (_push, outcome) => void noted.push(outcome),
  noteEntry: (entry) => void noted.push(entry.outcome),
  flush: async () => undefined,
});

describe('pusher with a rate limiter', () => {
  it('asks for one token per push (with its app and the shutdown signal) before sending, and reports the answer', async () => {
    const asked: Array<[number, AbortSignal | undefined, string | undefined]> = [];
    const observed: Array<[SendResult, string]> = [];
    const throttled: SendResult = { kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 1000 };
    const limiter = {
      acquire: async (n: number, s?: AbortSignal, app?: string) => (asked.push([n, s, app]), true),
      observe: (r: SendResult, app: string) => void observed.push([r, app]),
    };
    const p = pusher(limiter, throttled);
    const [a, b] = [message(), message()];
    const outcomes = await p.handle([a.inbound, b.inbound]);
    expect(asked.map(([n, , app]) => [n, app])).toEqual([
      [1, 'demo'],
      [1, 'demo'],
    ]);
    expect(p.sent).toEqual([a.push.pushId, b.push.pushId]);
    expect(observed).toEqual([
      [throttled, 'demo'],
      [throttled, 'demo'],
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['retry', 'retry']);
  });

  it("a push whose provider could not be made takes no budget: retried without asking for a token, and its app's pause still defers it first", async () => {
    // It waited in the platform budget's line and took a token ahead of other apps' pushes, then was
    // not sent, on every attempt: a replica with the wrong HERALD_SECRET_KEY (found by an audit).
    let asked = 0;
    const unreadable: PusherDeps['providers'] = { get: () => Promise.reject(new AppAdminError('no-secret-key', 'HERALD_SECRET_KEY is not set')), close: async () => undefined };
    const p = pusher({ acquire: async () => (asked++, true) }, { kind: 'delivered' }, 30_000, undefined, { providers: unreadable });
    const m = message();
    const [outcome] = await p.handle([m.inbound]);
    expect(outcome).toMatchObject({ kind: 'retry', code: 'transient', reason: 'credentials: HERALD_SECRET_KEY is not set' });
    expect(p.released).toEqual([m.push.pushId]);
    expect(asked).toBe(0);
    const paused = pusher({ acquire: async () => (asked++, false), pausedFor: () => 4_000 }, { kind: 'delivered' }, 30_000, undefined, { providers: unreadable });
    expect(await paused.handle([message().inbound])).toEqual([expect.objectContaining({ kind: 'defer', code: 'provider-backoff', delayMs: 4_000 })]);
    expect(asked).toBe(0);
  });

  it('a push waiting for budget when the pusher stops gives up at once: deferred unsent as stopping, not as over budget', async () => {
    let waiting!: () => void;
    const started = new Promise<void>((r) => (waiting = r));
    const limiter = {
      acquire: async (_n: number, s?: AbortSignal) => {
        waiting();
        await new Promise((r) => s?.addEventListener('abort', r, { once: true }));
        return false;
      },
    };
    const p = pusher(limiter, { kind: 'delivered' });
    const handled = p.handle([message().inbound]);
    await started;
    p.shutdown.abort();
    const [outcome] = await handled;
    expect(p.sent).toEqual([]);
    expect(outcome).toMatchObject({ kind: 'defer', code: 'stopping' });
  });

  // The ledger lower-cases ids and answered both spellings 'claimed'; the batch compared them as given and sent both.
  it('two copies of one push whose ids differ only in letter case are sent once', async () => {
    const p = pusher(undefined, { kind: 'delivered' });
    const m = message();
    const upper = { ...m.inbound, body: Buffer.from(JSON.stringify({ ...m.push, pushId: m.push.pushId.toUpperCase() })) };
    await p.handle([m.inbound, upper]);
    expect(p.sent).toEqual([m.push.pushId]);
  });

  it('a push that gets no budget is not sent: its claim is released and it is deferred, spending no attempt', async () => {
    const p = pusher({ acquire: async () => false }, { kind: 'delivered' });
    const m = message();
    const [outcome] = await p.handle([m.inbound]);
    expect(p.sent).toEqual([]);
    expect(p.released).toEqual([m.push.pushId]);
    expect(outcome).toMatchObject({ kind: 'defer', code: 'rate-limited' });
  });

  it('a push of an app paused by a provider\'s Retry-After is not sent: deferred until the pause ends, spending no attempt', async () => {
    const p = pusher({ acquire: async () => false, pausedFor: (app: string) => (app === 'demo' ? 4_321 : 0) }, { kind: 'delivered' });
    const m = message();
    const [outcome] = await p.handle([m.inbound]);
    expect(p.sent).toEqual([]);
    expect(p.released).toEqual([m.push.pushId]);
    // Spread above the pause's end (retry.ts): every push of the app deferred meanwhile is due then.
    expect(outcome).toEqual(expect.objectContaining({ kind: 'defer', code: 'provider-backoff', delayMs: 4_321, spread: true }));
  });

  it('waits for budget at most half a lease after the claim: the sent part is recorded, the rest deferred unsent', async () => {
    let calls = 0;
    // The first push gets budget at once; the second would wait far longer than the lease.
    const acquire = (_n: number, s?: AbortSignal) =>
      ++calls === 1 ? Promise.resolve(true) : new Promise<boolean>((resolve) => s?.addEventListener('abort', () => resolve(false)));
    const p = pusher({ acquire }, { kind: 'delivered', providerMessageId: 'x' }, 400);
    const [a, b] = [message(), message()];
    const started = Date.now();
    const outcomes = await p.handle([a.inbound, b.inbound]);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(p.sent).toEqual([a.push.pushId]);
    expect(p.completed).toEqual([a.push.pushId]);
    expect(p.released).toEqual([b.push.pushId]);
    expect(outcomes.map((o) => o.kind)).toEqual(['ack', 'defer']);
  });

  it('a push whose job is cancelled while it waits for budget is not sent: recorded as cancelled and acked', async () => {
    const cancelledJobs = new Set<string>();
    const limiter = { acquire: async () => (cancelledJobs.add('j'), true) };
    const noted: string[] = [];
    const p = pusher(limiter, { kind: 'delivered' }, 30_000, cancelledJobs, { outcomes: recorderInto(noted) });
    const m = message();
    const [outcome] = await p.handle([m.inbound]);
    expect(p.sent).toEqual([]);
    expect(p.completed).toEqual([m.push.pushId]);
    expect(p.released).toEqual([]);
    expect(outcome).toEqual({ kind: 'ack' });
    // Its job-status outcome in the ledger's own statement: noted apart, a pusher killed between the two writes lost it for good.
    expect(p.completions).toEqual([expect.objectContaining({ pushId: m.push.pushId, outcome: 'cancelled', status: expect.objectContaining({ outcome: 'cancelled' }) as unknown })]);
    expect(noted).toEqual([]);
  });

  it("a Web Push's budget is asked, and its provider's answer told, with its push service (the endpoint's host, or the allow-list's wildcard entry): a pause there is that service's", async () => {
    const asked: Array<string | undefined> = [];
    const told: Array<string | undefined> = [];
    const limiter = {
      acquire: async (_n: number, _s?: AbortSignal, _app?: string, _b?: unknown, service?: string) => (asked.push(service), true),
      observe: (_r: SendResult, _app: string, service?: string) => void told.push(service),
    };
    const p = pusher(limiter, { kind: 'delivered' }, 30_000, undefined, { platform: 'web' });
    const m = message();
    const webKeys = { p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url'), auth: Buffer.alloc(16, 1).toString('base64url') };
    const web = { ...m.push, platform: 'web', token: 'https://updates.push.services.mozilla.com/wpush/v2/gAAAA', webKeys };
    expect(await p.handle([{ ...m.inbound, routingKey: 'push.web.send', queue: 'push.web.send', body: Buffer.from(JSON.stringify(web)) }])).toEqual([{ kind: 'ack' }]);
    expect(asked).toEqual(['updates.push.services.mozilla.com']);
    expect(told).toEqual(['updates.push.services.mozilla.com']);
    // Edge's endpoints on WNS's regional hosts are one service, the allow-list's *.notify.windows.com.
    const wns = { ...web, pushId: randomUUID(), token: 'https://wns2-par02p.notify.windows.com/w/?token=AQE' };
    await p.handle([{ ...m.inbound, routingKey: 'push.web.send', queue: 'push.web.send', body: Buffer.from(JSON.stringify(wns)) }]);
    expect(asked.at(-1)).toBe('*.notify.windows.com');
    asked.length = 0;
    // APNs and FCM: one service each, none named.
    const apns = pusher(limiter, { kind: 'delivered' });
    await apns.handle([message().inbound]);
    expect(asked).toEqual([undefined]);
  });

  it("an app that reaches APNs or FCM through a connection of its own is paced on it: its 503 slows that app, not every app of the platform", async () => {
    const asked: Array<string | undefined> = [];
    const limiter = { acquire: async (_n: number, _s?: AbortSignal, _app?: string, _b?: unknown, service?: string) => (asked.push(service), true), observe: () => undefined };
    const own = { host: 'apns-relay.internal', port: 8443, ca: true, proxy: false };
    const none = { host: null, port: null, ca: false, proxy: false };
    const apps: PusherDeps['apps'] = {
      get: async (id) => ({ id, apnsTopic: 'com.herald.demo', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date(), apnsConnection: id === 'relayed' ? own : none }),
    };
    const p = pusher(limiter, { kind: 'delivered' }, 30_000, undefined, { apps });
    await p.handle([message('relayed').inbound, message('demo').inbound]);
    expect(asked).toEqual(['connection of relayed', undefined]);
    // FCM the same way; the limiter slows a lane apart from the platform's others (rate-limiter.spec.ts, Web Push's services).
    const fcmApps: PusherDeps['apps'] = {
      get: async (id) => ({ id, apnsTopic: null, fcmProjectId: 'p', enabled: true, createdAt: new Date(), updatedAt: new Date(), fcmConnection: { ...none, proxy: true } }),
    };
    const f = pusher(limiter, { kind: 'delivered' }, 30_000, undefined, { apps: fcmApps, platform: 'fcm' });
    const m = message('proxied');
    const fcm = { ...m.push, platform: 'fcm', token: 'f'.repeat(152) };
    await f.handle([{ ...m.inbound, routingKey: 'push.fcm.send', queue: 'push.fcm.send', body: Buffer.from(JSON.stringify(fcm)) }]);
    expect(asked.at(-1)).toBe('connection of proxied');
  });

  it('a push that expires while it waits for budget is not sent: recorded as expired and acked', async () => {
    const m = message();
    const expiring = { ...m.push, expiresAt: new Date(Date.now() + 150).toISOString() };
    const limiter = { acquire: async () => (await new Promise((r) => setTimeout(r, 200)), true) };
    const noted: string[] = [];
    const p = pusher(limiter, { kind: 'delivered' }, 30_000, undefined, { outcomes: recorderInto(noted) });
    const [outcome] = await p.handle([{ ...m.inbound, body: Buffer.from(JSON.stringify(expiring)) }]);
    expect(p.sent).toEqual([]);
    expect(p.completed).toEqual([m.push.pushId]);
    expect(outcome).toEqual({ kind: 'ack' });
    expect(p.completions).toEqual([expect.objectContaining({ outcome: 'expired', status: expect.objectContaining({ outcome: 'expired' }) as unknown })]);
    expect(noted).toEqual([]);
  });

  it("a transient answer's least delay is its retry's: the Retry-After, or Google's minute for QUOTA_EXCEEDED without one", async () => {
    const retried = async (answer: SendResult) => {
      const m = message();
      const [outcome] = await pusher(undefined, answer).handle([m.inbound]);
      return outcome;
    };
    expect(await retried({ kind: 'transient', reason: 'QUOTA_EXCEEDED', retryNotBeforeMs: 60_000 })).toEqual({ kind: 'retry', code: 'transient', reason: 'QUOTA_EXCEEDED', delayMs: 60_000, headers: { [SENT_BEFORE_HEADER]: 1 } });
    expect(await retried({ kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 7000 })).toMatchObject({ kind: 'retry', delayMs: 7000 });
    expect(await retried({ kind: 'transient', reason: 'InternalServerError' })).toEqual({ kind: 'retry', code: 'transient', reason: 'InternalServerError', headers: { [SENT_BEFORE_HEADER]: 1 } });
  });

  it('parks, unsent, a push whose app was disabled while it waited for budget', async () => {
    let asked = 0;
    const apps: PusherDeps['apps'] = { get: async (id) => ({ id, apnsTopic: 'com.herald.demo', fcmProjectId: null, enabled: asked++ === 0, createdAt: new Date(), updatedAt: new Date() }) };
    const slow = { acquire: async () => (await new Promise((r) => setTimeout(r, 150)), true) };
    const p = pusher(slow, { kind: 'delivered' }, 30_000, undefined, { apps });
    const m = message();
    const [outcome] = await p.handle([m.inbound]);
    expect(outcome).toEqual({ kind: 'park', code: 'app-disabled', reason: 'app "demo" was disabled (or removed) while the push waited for budget' });
    expect(p.sent).toEqual([]);
    expect(p.released).toEqual([m.push.pushId]);
  });

  it('lets the push go unsent when the app cannot be read again after the wait (a database away, maybe in the incident that disabled it): deferred, released, the batch not failed', async () => {
    let asked = 0;
    const apps: PusherDeps['apps'] = {
      get: async (id) => {
        if (asked++ > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return { id, apnsTopic: 'com.herald.demo', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date() };
      },
    };
    const slow = { acquire: async () => (await new Promise((r) => setTimeout(r, 150)), true) };
    const p = pusher(slow, { kind: 'delivered' }, 30_000, undefined, { apps });
    const m = message();
    expect((await p.handle([m.inbound])).map((o) => o.kind)).toEqual(['defer']);
    expect(p.sent).toEqual([]);
    expect(p.released).toEqual([m.push.pushId]);
  });

  it('counts a transient failure retried only when a retry follows: on the last attempt the consumer parks it, counted parked then', async () => {
    const registry = new Registry();
    const p = pusher(undefined, { kind: 'transient', reason: 'InternalServerError' }, 30_000, undefined, { lastAttempt: 6, metrics: createPusherMetrics(registry) });
    const [fifth, last] = [message(), message()];
    expect((await p.handle([{ ...fifth.inbound, attempt: 5 }, { ...last.inbound, attempt: 6 }])).map((o) => o.kind)).toEqual(['retry', 'retry']);
    expect(await registry.metrics()).toContain('herald_pushes_total{platform="apns",app="demo",outcome="retried"} 1\n');
  });

  it("Google's minute for QUOTA_EXCEEDED grows with each attempt (exponential back-off, as Google asks); a Retry-After does not", async () => {
    // Before, with the default schedule, QUOTA_EXCEEDED retries ran 60, 60, 60, 108, 540 s.
    const retriedAt = async (attempt: number, answer: SendResult) => {
      const m = message();
      const [outcome] = await pusher(undefined, answer).handle([{ ...m.inbound, attempt }]);
      return outcome?.kind === 'retry' ? outcome.delayMs : undefined;
    };
    const quota: SendResult = { kind: 'transient', reason: 'QUOTA_EXCEEDED', retryNotBeforeMs: 60_000 };
    expect(await Promise.all([1, 2, 3, 4, 5].map((a) => retriedAt(a, quota)))).toEqual([60_000, 120_000, 240_000, 480_000, 960_000]);
    expect(await retriedAt(3, { kind: 'transient', reason: 'QUOTA_EXCEEDED', retryAfterMs: 30_000 })).toBe(30_000);
  });

  it("an APNs 5xx waits Apple's 15 minutes (serverErrorRetryMs) before every attempt alike, or a longer Retry-After; other transient answers do not", async () => {
    // Before, a 503 was tried again after 1 s, 5 s, 30 s, 2 and 10 minutes: all inside the 15 minutes Apple asks, then parked.
    const retriedAt = async (attempt: number, answer: SendResult) => {
      const m = message();
      const [outcome] = await pusher(undefined, answer, 30_000, undefined, { serverErrorRetryMs: 900_000 }).handle([{ ...m.inbound, attempt }]);
      return outcome?.kind === 'retry' ? outcome.delayMs : 'not retried';
    };
    const unavailable: SendResult = { kind: 'transient', reason: 'ServiceUnavailable', serverError: true };
    expect(await Promise.all([1, 2, 3, 4, 5].map((a) => retriedAt(a, unavailable)))).toEqual([900_000, 900_000, 900_000, 900_000, 900_000]);
    expect(await retriedAt(1, { ...unavailable, retryAfterMs: 3_600_000 })).toBe(3_600_000);
    expect(await retriedAt(1, { kind: 'transient', reason: 'transport: apn write timeout' })).toBeUndefined();
    expect(await retriedAt(1, { kind: 'transient', reason: 'TooManyRequests' })).toBeUndefined();
  });

  it("an app slowed down by a quota answer holds no batch: its pushes beyond 250 ms of that rate are deferred to their own turns at once, and another app's pushes in the batch go", async () => {
    // Before, they waited in the limiter up to half a lease and the batch (the pusher's slots) with
    // them: a batch of 200, 180 of a throttled app, stayed busy 5 s (found by a review of the back-off).
    const limiter = await createRateLimiter({ platform: 'apns', store: new MemoryRateLimitStore(), logger, registry: new Registry() });
    try {
      for (let i = 0; i < 20; i++) await limiter.acquire(1, undefined, 'big');
      limiter.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED' }, 'big'); // about 10/s from here
      const p = pusher(limiter, { kind: 'delivered' }, 6000);
      const batch = [...Array.from({ length: 180 }, () => message('big')), ...Array.from({ length: 20 }, () => message('other'))];
      const started = Date.now();
      const outcomes = await p.handle(batch.map((m) => m.inbound));
      expect(Date.now() - started).toBeLessThan(1000); // not the 3 s of half this lease
      const other = new Set(batch.filter((m) => m.push.app === 'other').map((m) => m.push.pushId));
      expect(p.sent.filter((id) => other.has(id))).toHaveLength(20);
      const deferred = outcomes.filter((o) => o.kind === 'defer');
      expect(deferred.length).toBeGreaterThanOrEqual(170);
      // Spread above their turns: past the slowdown's end they would all be due at that one instant.
      deferred.forEach((o) => expect(o).toMatchObject({ code: 'app-slowed-down', spread: true }));
      // Each to its own turn, not all to one instant.
      expect(new Set(deferred.map((o) => (o.kind === 'defer' ? Math.round((o.delayMs ?? 0) / 50) : 0))).size).toBeGreaterThanOrEqual(30);
    } finally {
      limiter.close();
    }
  });

  it("an FCM 429 without FCM's own error detail waits Google's minute and slows its app down, as QUOTA_EXCEEDED does", async () => {
    // Before, it read RESOURCE_EXHAUSTED: retried on the schedule's first second, and the limiter slowed nobody.
    const limiter = await createRateLimiter({ platform: 'fcm', store: new MemoryRateLimitStore(), logger, registry: new Registry() });
    try {
      const bare = classifyFcmError({ code: 'RESOURCE_EXHAUSTED', message: "Quota exceeded for quota metric 'Send requests'", httpStatus: 429 });
      const outcomes = await pusher(limiter, bare).handle(Array.from({ length: 20 }, () => message('big').inbound));
      outcomes.forEach((o) => expect(o).toMatchObject({ kind: 'retry', delayMs: 60_000 }));
      const causes: string[] = [];
      const burst = await Promise.all(Array.from({ length: 50 }, () => limiter.acquire(1, AbortSignal.timeout(3000), 'big', (_, cause) => causes.push(cause))));
      expect(burst.filter((ok) => !ok).length).toBeGreaterThanOrEqual(40);
      expect(new Set(causes)).toEqual(new Set(['slowed']));
      expect(await limiter.acquire(1, undefined, 'other')).toBe(true);
    } finally {
      limiter.close();
    }
  });
});

describe("a pusher asks opt-outs and mutes again of a push that waited", () => {
  it("in its claim: only of a push whose preferences were asked more than preferencesRecheckMs ago, with its job's cancellation, and drops one its user no longer wants or its job's cancel", async () => {
    const claimed: Array<{ pushId: string; recheck?: unknown }> = [];
    const noted: string[] = [];
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const p = pusher(undefined, { kind: 'delivered' }, 30_000, undefined, {
      preferencesRecheckMs: 10_000,
      outcomes: recorderInto(noted),
      ledger: {
        claimLive: async (pushes) => (claimed.push(...pushes), new Map(pushes.map((q) => [q.pushId, q.recheck === undefined ? ('claimed' as const) : q.recheck.category === undefined ? ('cancelled' as const) : ('opted-out' as const)]))),
        complete: async () => undefined,
        release: async () => undefined,
        renew: async (ids) => ids.length,
      },
    });
    const of = (fields: Partial<DevicePush>) => {
      const m = message();
      const push = { ...m.push, category: 'marketing', ...fields };
      return { push, inbound: { ...m.inbound, body: Buffer.from(JSON.stringify(push)) } };
    };
    const fresh = of({ askedAt: ago(0) });
    // From a backlog: accepted an hour ago, its preferences read as the demuxer took it.
    const backlog = of({ acceptedAt: ago(3_600_000), askedAt: ago(100) });
    const waited = of({ acceptedAt: ago(60_000), askedAt: ago(60_000), objectId: 'thread:1' });
    // Made an hour ago for now: its release asked them.
    const released = of({ acceptedAt: ago(3_600_000), askedAt: ago(3_600_000), dueAt: ago(100) });
    const unstamped = of({ acceptedAt: ago(60_000) });
    const older = of({ acceptedAt: ago(60_000), category: undefined });
    const all = [fresh, backlog, waited, released, unstamped, older];
    const outcomes = await p.handle(all.map((m) => m.inbound));
    expect(new Map(claimed.map((c) => [c.pushId, c.recheck]))).toEqual(
      new Map([
        [fresh.push.pushId, undefined],
        [backlog.push.pushId, undefined],
        [waited.push.pushId, { jobId: 'j', app: 'demo', category: 'marketing', objectId: 'thread:1' }],
        [released.push.pushId, undefined],
        [unstamped.push.pushId, { jobId: 'j', app: 'demo', category: 'marketing' }],
        // Made before pushes carried their category: its job's cancel is asked all the same.
        [older.push.pushId, { jobId: 'j', app: 'demo' }],
      ]),
    );
    expect(outcomes.every((o) => o.kind === 'ack')).toBe(true);
    expect(p.sent.sort()).toEqual([fresh, backlog, released].map((m) => m.push.pushId).sort());
    expect(noted.filter((n) => n === 'opted-out')).toHaveLength(2);
    expect(noted.filter((n) => n === 'cancelled')).toHaveLength(1);
  });
});
