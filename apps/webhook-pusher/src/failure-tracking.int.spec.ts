import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { noteResults } from './failure-tracking.ts';
import { createSubscriptionCache } from './subscription-cache.ts';
import { createWebhookMetrics } from './webhook-metrics.ts';

const logger = createLogger({ service: 'failure-tracking-test', level: 'silent' });
const DAY_MS = 24 * 3600_000;
/** The last attempt of a delivery (the default schedule: five retries). */
const LAST = 6;
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
    tracking: { store: t.db.subscriptions, disableAfterMs: DAY_MS, lastAttempt: LAST },
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

describe('webhook subscription health', () => {
  it('a batch with a success and a failure for one subscription failing for over a day does not disable it: the success ends that spell', async () => {
    const sub = await subscribe('mixed');
    const since = new Date('2026-01-01T00:00:00Z');
    await t.db.subscriptions.noteFailure(sub.id, since);
    const at = new Date(since.getTime() + DAY_MS + 3600_000);
    const { note, metrics } = tracker(at);
    // The receiver answers 429 to one request in twenty: every batch holds a success and a failure.
    await note([{ sub: { ...sub, failingSince: since }, attempt: LAST }, { sub: { ...sub, failingSince: since }, attempt: LAST }], [{ kind: 'delivered' }, { kind: 'transient', reason: 'HTTP 429' }]);
    const row = await stored(sub.id);
    expect(row?.enabled).toBe(true);
    expect(row?.failingSince).toEqual(at); // a new spell, from this batch
    expect((await metrics.disabled.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
  });

  it("a success clears a failure another pusher recorded after this pusher's cached row was read", async () => {
    const sub = await subscribe('stale');
    const since = new Date('2026-01-01T00:00:00Z');
    await t.db.subscriptions.noteFailure(sub.id, since); // another pusher, a moment ago
    const { note } = tracker(new Date(since.getTime() + 1000));
    await note([{ sub, attempt: 1 }], [{ kind: 'delivered' }]); // sub: the cached row, read before, says not failing
    expect((await stored(sub.id))?.failingSince).toBeNull();
  });

  it('a failure that will be retried does not disable a subscription failing since long ago: the retry may succeed; a delivery given up does', async () => {
    const sub = await subscribe('quiet');
    const since = new Date('2026-01-01T00:00:00Z');
    // Down for a while on day 1 (that delivery parked), then no change for a day.
    await t.db.subscriptions.noteFailure(sub.id, since);
    const at = new Date(since.getTime() + DAY_MS + 3600_000);
    const { note, metrics } = tracker(at);
    await note([{ sub, attempt: 1 }], [{ kind: 'transient', reason: 'HTTP 503' }]); // one blip on the next change's first attempt
    expect((await stored(sub.id))?.enabled).toBe(true);
    expect((await metrics.disabled.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    // Still down at its last attempt: given up, and the endpoint has failed every try for over a day.
    await note([{ sub, attempt: LAST }], [{ kind: 'transient', reason: 'HTTP 503' }]);
    expect((await stored(sub.id))?.enabled).toBe(false);
    // A refusal of every delivery (410 Gone) is given up at once.
    const refused = await subscribe('refused');
    await t.db.subscriptions.noteFailure(refused.id, since);
    await note([{ sub: refused, attempt: 1 }], [{ kind: 'permanent', status: 410, reason: 'HTTP 410' }]);
    expect((await stored(refused.id))?.enabled).toBe(false);
    // A refusal of one payload (422) is the endpoint working: no failure, no disabling, the spell as it was.
    const picky = await subscribe('picky');
    await t.db.subscriptions.noteFailure(picky.id, since);
    await note([{ sub: picky, attempt: 1 }], [{ kind: 'permanent', status: 422, reason: 'HTTP 422: unknown field' }]);
    expect(await stored(picky.id)).toMatchObject({ enabled: true, failingSince: since });
  });

  it("disables a subscription whose receiver's error answer holds a NUL byte, with a readable reason", async () => {
    const sub = await subscribe('nul');
    const since = new Date('2026-01-01T00:00:00Z');
    await t.db.subscriptions.noteFailure(sub.id, since);
    const { note } = tracker(new Date(since.getTime() + DAY_MS + 1));
    await note([{ sub, attempt: LAST }], [{ kind: 'transient', reason: 'HTTP 500: \u001f\u008b\u0008\u0000 gzip' }]);
    const row = await stored(sub.id);
    expect(row?.enabled).toBe(false);
    expect(row?.disabledReason).toMatch(/^endpoint failing since 2026-01-01T00:00:00.000Z \(last: HTTP 500: .*gzip\)$/);
    expect(row?.disabledReason).not.toContain('\u0000');
  });
});
