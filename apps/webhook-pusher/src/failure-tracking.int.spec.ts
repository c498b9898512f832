import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { noteResults, quietMsOf } from './failure-tracking.ts';
import { createSubscriptionCache } from './subscription-cache.ts';
import { createWebhookMetrics } from './webhook-metrics.ts';

const logger = createLogger({ service: 'failure-tracking-test', level: 'silent' });
const DAY_MS = 24 * 3600_000;
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('failtrack');
});
afterAll(async () => {
  await t.drop();
});

/** noteResults as the webhook-pusher calls it, over the real subscriptions table, at `now`. */
function tracker(now: Date) {
  const metrics = createWebhookMetrics(new Registry());
  const deps = {
    tracking: { store: t.db.subscriptions, disableAfterMs: DAY_MS },
    subscriptions: createSubscriptionCache(t.db.subscriptions, 5000),
    webhookMetrics: metrics,
    logger,
    now: () => now,
  };
  return { note: (sent: Parameters<typeof noteResults>[0], results: Parameters<typeof noteResults>[1]) => noteResults(sent, results, deps), metrics };
}

const subscribe = (id: string) =>
  t.db.subscriptions.create({ team: 'a', callbackUrl: `https://hooks.example.com/${id}`, resourceType: 'campaign', resourceId: id, secret: 's'.repeat(32) });
const stored = async (id: string) => (await t.db.subscriptions.getMany([id])).get(id);
const QUIET_MS = quietMsOf(DAY_MS);
/** Failures recorded (by any pusher) from `since` up to `until`, an hour apart: one failing spell. */
async function failingFrom(id: string, since: Date, until: Date): Promise<void> {
  for (let at = since.getTime(); at <= until.getTime(); at += 3600_000) await t.db.subscriptions.noteFailure(id, new Date(at), QUIET_MS);
}

describe('webhook subscription health', () => {
  it('a batch with a success and a failure for one subscription failing for over a day does not disable it: the success ends that spell', async () => {
    const sub = await subscribe('mixed');
    const since = new Date('2026-01-01T00:00:00Z');
    const at = new Date(since.getTime() + DAY_MS + 3600_000);
    await failingFrom(sub.id, since, new Date(at.getTime() - 3600_000));
    const { note, metrics } = tracker(at);
    // The receiver answers 429 to one request in twenty: every batch holds a success and a failure.
    await note([{ sub: { ...sub, failingSince: since } }, { sub: { ...sub, failingSince: since } }], [{ kind: 'delivered' }, { kind: 'transient', reason: 'HTTP 429' }]);
    const row = await stored(sub.id);
    expect(row?.enabled).toBe(true);
    expect(row?.failingSince).toEqual(at); // a new spell, from this batch
    expect((await metrics.disabled.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
  });

  it("a success clears a failure another pusher recorded after this pusher's cached row was read", async () => {
    const sub = await subscribe('stale');
    const since = new Date('2026-01-01T00:00:00Z');
    await t.db.subscriptions.noteFailure(sub.id, since, QUIET_MS); // another pusher, a moment ago
    const { note } = tracker(new Date(since.getTime() + 1000));
    await note([{ sub }], [{ kind: 'delivered' }]); // sub: the cached row, read before, says not failing
    expect((await stored(sub.id))?.failingSince).toBeNull();
  });

  it('two failures a day apart, nothing tried between them, are not a day of failing: the second starts a new spell', async () => {
    const sub = await subscribe('quiet');
    const since = new Date('2026-01-01T00:00:00Z');
    // Down for a while on day 1 (its retries ran out, the delivery parked), then no change for a day.
    await failingFrom(sub.id, since, new Date(since.getTime() + 3600_000));
    const at = new Date(since.getTime() + DAY_MS + 3600_000);
    const { note, metrics } = tracker(at);
    await note([{ sub }], [{ kind: 'transient', reason: 'HTTP 503' }]); // one blip on the next change
    const row = await stored(sub.id);
    expect(row?.enabled).toBe(true);
    expect(row?.failingSince).toEqual(at);
    expect((await metrics.disabled.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
  });

  it("disables a subscription whose receiver's error answer holds a NUL byte, with a readable reason", async () => {
    const sub = await subscribe('nul');
    const since = new Date('2026-01-01T00:00:00Z');
    await failingFrom(sub.id, since, new Date(since.getTime() + DAY_MS));
    const { note } = tracker(new Date(since.getTime() + DAY_MS + 1));
    await note([{ sub }], [{ kind: 'transient', reason: 'HTTP 500: \u001f\u008b\u0008\u0000 gzip' }]);
    const row = await stored(sub.id);
    expect(row?.enabled).toBe(false);
    expect(row?.disabledReason).toMatch(/^endpoint failing since 2026-01-01T00:00:00.000Z \(last: HTTP 500: .*gzip\)$/);
    expect(row?.disabledReason).not.toContain('\u0000');
  });
});
