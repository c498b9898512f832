import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { describe, expect, it } from 'vitest';
import { createLimiterMetrics } from './limiter-metrics.ts';
import { MemoryRateLimitStore } from './memory-rate-limit-store.ts';
import { ProviderBackOff } from './provider-back-off.ts';
import type { BackPressureOptions } from './back-pressure.ts';

const logger = createLogger({ service: 'provider-back-off-spec', level: 'silent', format: 'json' });
const settle = () => new Promise((r) => setImmediate(r));

/** Pushers of one platform sharing one store, on one clock the test moves. */
function fleet(options: BackPressureOptions = {}) {
  const clock = { now: 0 };
  const store = new MemoryRateLimitStore(() => clock.now);
  const registry = new Registry();
  const metrics = createLimiterMetrics(registry);
  const pusher = () => new ProviderBackOff({ platform: 'apns', store, logger, metrics, options, now: () => clock.now });
  return { clock, store, registry, pusher };
}

/** Send as fast as pacing allows (1 per ms) for `ms` from `from`; returns how many went. */
function drive(b: ProviderBackOff, app: string, from: number, ms: number): number {
  let sent = 0;
  for (let t = from; t < from + ms; t++) {
    if (b.delayFor(1, app, t) > 0) continue;
    b.sent(1, app, t);
    sent++;
  }
  return sent;
}

describe('ProviderBackOff', () => {
  it('a Retry-After pauses that app at once, for at least that long; other apps keep sending', () => {
    const { clock, pusher } = fleet();
    const b = pusher();
    clock.now = 1_000;
    b.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 5_000 }, 'a');
    expect(b.pausedFor('a')).toBe(5_000);
    expect(b.pausedFor('b')).toBe(0);
    expect(b.delayFor(1, 'b', 1_000)).toBe(0);
    expect(b.pausedFor('a', 5_999)).toBe(1);
    expect(b.pausedFor('a', 6_000)).toBe(0);
  });

  // Apple: "too many requests were made consecutively to the same device token"; RFC 8030 §8.4: wait "before it makes another request to the push resource".
  it("a Retry-After that comes with one device's throttle pauses nobody: the push itself waits it", async () => {
    const { clock, store, pusher } = fleet();
    const b = pusher();
    clock.now = 1_000;
    b.observe({ kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 600_000 }, 'a');
    b.observe({ kind: 'transient', reason: 'TooManyRequests: HTTP 429', retryAfterMs: 600_000 }, 'a@web.push.apple.com', 'web.push.apple.com');
    expect([b.pausedFor('a'), b.pausedFor('a@web.push.apple.com'), b.delayFor(1, 'a', 1_000)]).toEqual([0, 0, 0]);
    expect(await store.pauses('apns')).toEqual([]);
  });

  it('every other pusher of the platform holds the app back from its next refresh on', async () => {
    const { clock, store, registry, pusher } = fleet();
    const [got, other, late] = [pusher(), pusher(), pusher()];
    got.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 5_000 }, 'a');
    await settle();
    expect(await store.pauses('apns')).toEqual([{ app: 'a', msLeft: 5_000 }]);
    expect(await store.pauses('fcm')).toEqual([]);
    expect(other.pausedFor('a')).toBe(0); // not before its refresh
    clock.now = 800;
    await other.learn();
    expect(other.pausedFor('a')).toBe(4_200);
    expect(other.pausedFor('b')).toBe(0);
    clock.now = 4_000; // a pusher started meanwhile learns it at its first read
    await late.learn();
    expect(late.pausedFor('a')).toBe(1_000);
    clock.now = 5_000;
    await Promise.all([got.learn(), other.learn(), late.learn()]);
    expect([got, other, late].map((b) => b.pausedFor('a'))).toEqual([0, 0, 0]);
    const counted = await registry.getSingleMetricAsString('herald_rate_limit_app_pauses_total');
    expect(counted).toContain('herald_rate_limit_app_pauses_total{platform="apns",app="a",source="provider"} 1');
    expect(counted).toContain('herald_rate_limit_app_pauses_total{platform="apns",app="a",source="fleet"} 2');
  });

  it('a later, longer Retry-After extends the pause; a shorter one does not cut it; writes are one at a time', async () => {
    const { clock, store, pusher } = fleet();
    const b = pusher();
    let writes = 0;
    const pause = store.pause.bind(store);
    store.pause = (key, ms) => (writes++, pause(key, ms));
    for (let i = 0; i < 50; i++) b.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 5_000 + i }, 'a');
    b.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 1_000 }, 'a');
    await settle();
    expect(writes).toBeLessThanOrEqual(2);
    expect(await store.pauses('apns')).toEqual([{ app: 'a', msLeft: 5_049 }]);
    clock.now = 3_000;
    b.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 10_000 }, 'a');
    await settle();
    expect(b.pausedFor('a')).toBe(10_000);
    expect(await store.pauses('apns')).toEqual([{ app: 'a', msLeft: 10_000 }]);
  });

  it('a Retry-After is honoured up to maxPauseMs', () => {
    const { pusher } = fleet({ maxPauseMs: 60_000 });
    const b = pusher();
    b.observe({ kind: 'transient', reason: 'ServiceUnavailable', retryAfterMs: 86_400_000 }, 'a');
    expect(b.pausedFor('a')).toBe(60_000);
  });

  it('when the store cannot be written, this pusher still holds the app back', async () => {
    const { store, pusher } = fleet();
    store.pause = () => Promise.reject(new Error('database down'));
    const b = pusher();
    b.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 2_000 }, 'a');
    await settle();
    expect(b.pausedFor('a')).toBe(2_000);
  });

  it('without Retry-After: APNs TooManyRequests (one device) slows nobody down', () => {
    const { clock, pusher } = fleet();
    const b = pusher();
    expect(drive(b, 'a', 0, 1_000)).toBe(1_000);
    clock.now = 1_000;
    b.observe({ kind: 'transient', reason: 'TooManyRequests' }, 'a');
    expect(b.pausedFor('a', 1_000)).toBe(0);
    expect(b.factor(1_000)).toBe(1);
    expect(drive(b, 'a', 1_000, 1_000)).toBe(1_000);
  });

  it("without Retry-After: FCM QUOTA_EXCEEDED (the app's project) slows that app down, not the others", () => {
    const { clock, pusher } = fleet();
    const b = pusher();
    drive(b, 'a', 0, 1_000);
    clock.now = 1_000;
    b.observe({ kind: 'transient', reason: 'message-rate-exceeded: Sending limit exceeded for the message target.' }, 'a');
    expect(b.factor(1_000)).toBe(1);
    const a = drive(b, 'a', 1_000, 1_000);
    expect(a).toBeGreaterThan(400);
    expect(a).toBeLessThan(600);
    expect(drive(b, 'b', 2_000, 1_000)).toBe(1_000);
  });

  it('without Retry-After: APNs 503 / FCM UNAVAILABLE (the provider) slows the whole platform down in this pusher', () => {
    const { clock, pusher } = fleet();
    const b = pusher();
    drive(b, 'a', 0, 1_000);
    clock.now = 1_000;
    b.observe({ kind: 'transient', reason: 'ServiceUnavailable' }, 'a');
    expect(b.factor(1_000)).toBe(0.5);
    expect(b.pausedFor('a', 1_000)).toBe(0);
    expect(drive(b, 'b', 1_000, 1_000)).toBeLessThan(600);
  });

  it("names the push service an overload slows down in `push_service`, not in `service` (the log line's own: the Herald service's name)", () => {
    const clock = { now: 1_000 };
    const warnings: unknown[] = [];
    const spy = createLogger({ service: 'web-pusher', level: 'silent', format: 'json' });
    spy.warn = ((fields: unknown) => void warnings.push(fields)) as typeof spy.warn;
    const metrics = createLimiterMetrics(new Registry());
    const b = new ProviderBackOff({ platform: 'web', store: new MemoryRateLimitStore(() => clock.now), logger: spy, metrics, options: {}, now: () => clock.now });
    b.observe({ kind: 'transient', reason: 'HTTP 503 ServiceUnavailable' }, 'a@updates.push.services.mozilla.com', 'updates.push.services.mozilla.com');
    expect(warnings).toEqual([expect.objectContaining({ push_service: 'updates.push.services.mozilla.com' })]);
    expect(warnings[0]).not.toHaveProperty('service');
  });
});
