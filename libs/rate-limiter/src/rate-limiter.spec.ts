import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRateLimitStore } from './memory-rate-limit-store.ts';
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rate-limiter.ts';

const logger = createLogger({ service: 'rate-limiter-spec', level: 'silent', format: 'json' });
const open: RateLimiter[] = [];
afterEach(() => open.splice(0).forEach((l) => l.close()));

async function limiter(store: MemoryRateLimitStore, extra: Partial<RateLimiterOptions> = {}): Promise<RateLimiter> {
  const l = await createRateLimiter({ platform: 'apns', store, logger, registry: new Registry(), refreshMs: 100, ...extra });
  open.push(l);
  return l;
}

/** Acquire one token at a time, `concurrency` at once, until `ms` has passed; returns grant times. */
async function drive(l: RateLimiter, ms: number, concurrency = 20, app?: string): Promise<number[]> {
  const times: number[] = [];
  const until = Date.now() + ms;
  const worker = async (): Promise<void> => {
    while (Date.now() < until) {
      if (await l.acquire(1, AbortSignal.timeout(until - Date.now() + 5), app)) times.push(Date.now());
      await new Promise((r) => setImmediate(r)); // a real send does I/O: let timers run
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return times.filter((t) => t < until);
}

/**
 * A store that records what it granted per 100 ms window of its own clock (exact, whatever the
 * machine's load): the window is read when the store reads its clock for a lease, not after the
 * await, which could fall in the next window.
 */
function recordingStore(): { store: MemoryRateLimitStore; grantedPerWindow: Map<number, number> } {
  let leaseNow = 0;
  const store = new MemoryRateLimitStore(() => (leaseNow = Date.now()));
  const grantedPerWindow = new Map<number, number>();
  const lease = store.lease.bind(store);
  store.lease = async (key, want, windowMs) => {
    const pending = lease(key, want, windowMs);
    const index = Math.floor(leaseNow / windowMs);
    const grant = await pending;
    grantedPerWindow.set(index, (grantedPerWindow.get(index) ?? 0) + (grant?.granted ?? 0));
    return grant;
  };
  return { store, grantedPerWindow };
}

function maxInAnySecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let lo = 0, hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] as number) - (sorted[lo] as number) >= 1000) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

describe('createRateLimiter', () => {
  it('with no limit configured, never waits and never leases', async () => {
    const store = new MemoryRateLimitStore();
    const l = await limiter(store);
    const started = Date.now();
    for (let i = 0; i < 10_000; i++) expect(await l.acquire(1)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(store.leases).toBe(0);
  });

  it('refuses to start when the limits cannot be read (it would send unpaced), and later keeps the last limits it read', async () => {
    const store = new MemoryRateLimitStore();
    store.set({ platform: 'apns' }, 10);
    const list = store.list.bind(store);
    store.list = () => Promise.reject(new Error('database down'));
    await expect(limiter(store)).rejects.toThrow('could not read the rate limits: database down');
    store.list = list;
    const l = await limiter(store, { maxWaitMs: 50 });
    store.list = () => Promise.reject(new Error('database down'));
    await new Promise((r) => setTimeout(r, 250)); // two refreshes fail
    const granted = await Promise.all(Array.from({ length: 20 }, () => l.acquire(1)));
    expect(granted.filter(Boolean).length).toBeLessThanOrEqual(2); // 10/s: at most a window's share and a spill within 50 ms
  });

  it('a read of the limits the store never answers is left behind: later refreshes still learn of pauses', async () => {
    const store = new MemoryRateLimitStore();
    const list = store.list.bind(store);
    let calls = 0;
    // The second read (the first refresh after start) hangs, as on a connection a failover left half open.
    store.list = () => (++calls === 2 ? new Promise<never>(() => undefined) : list());
    const l = await limiter(store, { leaseTimeoutMs: 200 });
    await new Promise((r) => setTimeout(r, 150)); // the hung read has begun
    await store.pause({ platform: 'apns', app: 'a' }, 60_000);
    const started = Date.now();
    while (l.pausedFor('a') === 0 && Date.now() - started < 3_000) await new Promise((r) => setTimeout(r, 20));
    expect(l.pausedFor('a')).toBeGreaterThan(0);
    expect(calls).toBeGreaterThan(2);
  });

  it('three processes sharing a 300/s budget: no window over its share, the whole budget used', async () => {
    // What the fleet was granted per 100 ms window, as the shared store saw it: never more than
    // the window's share of 30.
    const { store, grantedPerWindow } = recordingStore();
    store.set({ platform: 'apns' }, 300);
    const fleet = await Promise.all([limiter(store), limiter(store), limiter(store)]);
    const times = (await Promise.all(fleet.map((l) => drive(l, 1500)))).flat();
    expect(Math.max(...grantedPerWindow.values())).toBeLessThanOrEqual(30);
    // Spent tokens, timed by when their acquire() resolved: on an idle machine each window holds
    // its share (+2 for a release landing a millisecond late); a starved event loop can hand a
    // late window's tokens out next to the following window's, so this bound is per second.
    expect(maxInAnySecond(times)).toBeLessThanOrEqual(300 + 30);
    expect(times.length).toBeGreaterThanOrEqual(0.8 * 450); // the e2e suite holds it to 95%; timers on a loaded box run late
    expect(times.length).toBeLessThanOrEqual(450 + 30);
    // Leases are per slice, not per push.
    expect(store.leases).toBeLessThan(times.length / 2);
  });

  it("keeps its time on a clock the host's wall clock stepping back does not move: a binding budget goes on being leased, and a Retry-After pause lasts what it said", async () => {
    // The store's clock is the database's, which did not step.
    const steady = () => performance.timeOrigin + performance.now();
    const store = new MemoryRateLimitStore(steady);
    store.set({ platform: 'apns' }, 100);
    const wall = Date.now.bind(Date);
    let offset = 0;
    const stepped = vi.spyOn(Date, 'now').mockImplementation(() => wall() + offset);
    try {
      const l = await limiter(store, { maxWaitMs: 1_500 });
      // A backlog binds the budget (10 a 100 ms window), then the host's clock steps back a minute (an NTP step, a VM resumed).
      const backlog = Array.from({ length: 30 }, () => l.acquire(1, undefined, 'demo'));
      await new Promise((r) => setTimeout(r, 20));
      l.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 2_000 }, 'paused');
      offset = -60_000;
      const granted = (await Promise.all(backlog)).filter(Boolean).length;
      expect(granted).toBe(30);
      expect(l.pausedFor('paused')).toBeLessThanOrEqual(2_000);
    } finally {
      stepped.mockRestore();
    }
  });

  it('a waiting acquire gives up at its wait bound, and at once when aborted or closed', async () => {
    // A budget that never has a token to spare.
    const store = { list: async () => [{ platform: 'apns' as const, app: '', ratePerSec: 1 }], lease: async () => ({ granted: 0, ratePerSec: 1, msLeftInWindow: 50 }) };
    const l = await limiter(store as unknown as MemoryRateLimitStore, { maxWaitMs: 200 });
    let started = Date.now();
    expect(await l.acquire(1)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(400);
    const controller = new AbortController();
    started = Date.now();
    const aborted = l.acquire(1, controller.signal);
    setTimeout(() => controller.abort(), 20);
    expect(await aborted).toBe(false);
    expect(Date.now() - started).toBeLessThan(150);
    const closedWait = l.acquire(1);
    l.close();
    expect(await closedWait).toBe(false);
  });

  it('follows a limit set, changed and removed at run time within the refresh interval', async () => {
    const { store, grantedPerWindow } = recordingStore();
    const l = await limiter(store);
    store.set({ platform: 'apns' }, 50);
    await new Promise((r) => setTimeout(r, 150));
    expect((await drive(l, 1000)).length).toBeLessThanOrEqual(55);
    expect(Math.max(...grantedPerWindow.values())).toBeLessThanOrEqual(5);
    const changedIn = Math.floor(Date.now() / 100);
    store.set({ platform: 'apns' }, 400);
    await drive(l, 1000);
    // Counted per window of the store, not in a second of wall time: a process that stalls leases
    // nothing meanwhile (fewer grants, by design), which a count of one second would take for the
    // old limit still in force. The new share (40) is granted within two windows of the change
    // (the limit is refreshed every 100 ms), never more, and from then on in full in at least half the windows.
    const after = [...grantedPerWindow].filter(([w]) => w > changedIn).sort(([a], [b]) => a - b);
    const firstFull = after.find(([, g]) => g > 5)?.[0];
    expect(firstFull, 'the first window granted more than the old share of 5').toBeLessThanOrEqual(changedIn + 2);
    expect(Math.max(...after.map(([, g]) => g))).toBeLessThanOrEqual(40);
    const fromFirstFull = after.filter(([w]) => w >= (firstFull as number));
    expect(fromFirstFull.filter(([, g]) => g === 40).length, 'windows granted the whole share of 40').toBeGreaterThanOrEqual(Math.ceil(fromFirstFull.length / 2));
    store.remove({ platform: 'apns' });
    await new Promise((r) => setTimeout(r, 150));
    expect((await drive(l, 200)).length).toBeGreaterThan(500); // ≥ 2,500/s: no limit any more
  });

  it('an app budget limits that app on top of the platform budget', async () => {
    const store = new MemoryRateLimitStore();
    store.set({ platform: 'apns' }, 1000);
    store.set({ platform: 'apns', app: 'slow' }, 50);
    const l = await limiter(store);
    const [slow, fast] = await Promise.all([drive(l, 1000, 10, 'slow'), drive(l, 1000, 10, 'fast')]);
    expect(slow.length).toBeLessThanOrEqual(55);
    expect(slow.length).toBeGreaterThanOrEqual(25); // loose: timers run late on a loaded box
    expect(fast.length + slow.length).toBeLessThanOrEqual(1000 + 100);
    // The other app is held by the platform budget only, not by the slow app's: many times what
    // the slow app got. (Not a count of the platform's 1,000: a process that stalls, for a major
    // GC or on a loaded machine, leases nothing meanwhile and loses the tokens it held, by design.
    // Recorded leases showed stalls of 100–230 ms where 712–751 went through, against 950–966
    // without.)
    expect(fast.length).toBeGreaterThan(5 * slow.length);
  });

  it("an app's own budget holds back no more of its pushes than it serves in 250 ms: the rest are refused at once, each booked a turn at its rate", async () => {
    // Held, a broadcast of an app limited to 100/s filled every pusher's window and the whole
    // platform went at 100/s (found by a review of the limiter).
    const store = new MemoryRateLimitStore();
    store.set({ platform: 'apns' }, 1000);
    store.set({ platform: 'apns', app: 'big' }, 100);
    // One reading of the clock a tick, shared by the limiter and this spec: each turn is told
    // relative to the limiter's reading and recorded against this spec's, and a pause between two
    // readings (a GC on a loaded machine) moved a turn by 3 ms in one CI run.
    let tick: number | undefined;
    const now = (): number => {
      if (tick === undefined) {
        tick = Date.now();
        queueMicrotask(() => (tick = undefined));
      }
      return tick;
    };
    const l = await limiter(store, { now });
    const started = Date.now();
    const settled: { ok: boolean; at: number }[] = [];
    const turns: number[] = [];
    const broadcast = Array.from({ length: 200 }, () =>
      l.acquire(1, AbortSignal.timeout(2000), 'big', (turnInMs) => turns.push(now() - started + turnInMs)).then((ok) => settled.push({ ok, at: Date.now() - started })),
    );
    await new Promise((r) => setTimeout(r, 50));
    const refusedAtOnce = settled.filter((s) => !s.ok).length;
    expect(refusedAtOnce).toBeGreaterThanOrEqual(150); // at most 100/s × 250 ms = 25 wait, some granted at once
    // Each refused push is told its own turn: after those waiting, 10 ms apart at the app's rate.
    expect(turns).toHaveLength(refusedAtOnce);
    expect(turns[0]).toBeGreaterThanOrEqual(200);
    turns.slice(1).forEach((t, i) => expect(Math.abs(t - (turns[i] as number) - 10)).toBeLessThanOrEqual(1));
    expect(turns[turns.length - 1]).toBeLessThanOrEqual(2100); // 250 ms of waiting pushes, then 10 ms a refused one
    // Another app is not held behind them.
    const otherStarted = Date.now();
    for (let i = 0; i < 20; i++) expect(await l.acquire(1, undefined, 'other')).toBe(true);
    expect(Date.now() - otherStarted).toBeLessThan(200);
    await Promise.all(broadcast);
    // The ones held were served within about the time the app's budget needs for them.
    expect(settled.filter((s) => s.ok).length).toBeLessThanOrEqual(200 - refusedAtOnce + 5);
    expect(Math.max(...settled.filter((s) => s.ok).map((s) => s.at))).toBeLessThan(1000);
  });

  it("no turn is booked beyond the longest deferral: such a push is told that, and the turns stay where the budget can take them", async () => {
    const store = new MemoryRateLimitStore();
    store.set({ platform: 'apns', app: 'big' }, 100);
    const l = await limiter(store, { maxTurnMs: 500 });
    const turns: number[] = [];
    const broadcast = Array.from({ length: 200 }, () => l.acquire(1, AbortSignal.timeout(1000), 'big', (turnInMs) => turns.push(turnInMs)));
    await new Promise((r) => setTimeout(r, 50));
    // 25 wait (250 ms), then turns 10 ms apart up to 500 ms: about 25 booked; the rest told 500 ms and booked nothing.
    const booked = turns.filter((t) => t < 500);
    expect(booked.length).toBeGreaterThanOrEqual(20);
    expect(booked.length).toBeLessThanOrEqual(30);
    expect(turns.filter((t) => t === 500).length).toBe(turns.length - booked.length);
    // Those coming back at the horizon get turns after the last booked one (within it again), not
    // after a turn for every refusal before them (which would be 2 s out by now).
    await new Promise((r) => setTimeout(r, 450));
    const later: number[] = [];
    const back = Array.from({ length: 60 }, () => l.acquire(1, AbortSignal.timeout(1000), 'big', (turnInMs) => later.push(turnInMs)));
    await new Promise((r) => setTimeout(r, 20));
    expect(later.length).toBeGreaterThanOrEqual(30);
    expect(later.filter((t) => t < 500).length).toBeGreaterThanOrEqual(15);
    await Promise.all([...broadcast, ...back]);
  });

  it("a change of an app's budget re-books its turns at once: raised (or removed), its next pushes are paced by the new rate; lowered, they go after those booked, at the new rate", async () => {
    // Kept, the turns booked at 10/s (up to maxTurnMs, 10 minutes, ahead during a broadcast) stood
    // after a raise to 200/s, and the app's next pushes were deferred behind them (found by an audit).
    let clock = 1_700_000_000_000; // one clock for the limiter and the store, moved by hand: turns are exact
    const now = (): number => clock;
    const store = new MemoryRateLimitStore(now);
    store.set({ platform: 'apns', app: 'big' }, 10);
    const l = await limiter(store, { now, maxTurnMs: 600_000 });
    /** `count` pushes of the app at once: the turns of those refused (the rest wait, giving up within 50 ms). */
    const burst = async (count: number): Promise<number[]> => {
      const turns: number[] = [];
      await Promise.all(Array.from({ length: count }, () => l.acquire(1, AbortSignal.timeout(50), 'big', (turnInMs) => turns.push(turnInMs))));
      return turns;
    };
    const change = async (rate: number | undefined): Promise<void> => {
      if (rate === undefined) store.remove({ platform: 'apns', app: 'big' });
      else store.set({ platform: 'apns', app: 'big' }, rate);
      await new Promise((r) => setTimeout(r, 300)); // the limiter's next refresh (refreshMs 100)
    };
    // 10/s: 2 wait (250 ms of it), 198 are booked 100 ms apart after them, the last 20 s out.
    expect((await burst(200)).at(-1)).toBe(20_000);
    clock += 1_000;
    await change(200);
    // 200/s: 50 wait, the next is booked 5 ms after them (19 s out with the turns kept).
    const raised = await burst(300);
    expect(raised).toHaveLength(250);
    expect(raised[0]).toBe(255);
    expect(raised.at(-1)).toBe(1_500);
    // Lowered 200 ms later (past the tokens in hand), with 1.3 s booked at 200/s (260 pushes' worth):
    // those take 26 s at 10/s, and the next push is booked after them (1.4 s out with the turns kept).
    clock += 200;
    await change(10);
    expect((await burst(10))[0]).toBe(26_100);
    // Removed: nothing is booked, nothing refused.
    await change(undefined);
    expect(await burst(100)).toEqual([]);
  });

  it("an app slowed down by FCM QUOTA_EXCEEDED holds back no more of its pushes than that rate serves in 250 ms: the rest are refused at once, each booked a turn, and other apps go on", async () => {
    // Held, a broadcasting app's pushes waited in acquire up to half a lease (15 s), took the
    // pusher's slots, and other apps' pushes queued behind them (found by a review of the back-off).
    const store = new MemoryRateLimitStore();
    const l = await limiter(store, { platform: 'fcm' });
    // 20 pushes in the second before the answer: QUOTA_EXCEEDED halves the app to about 10/s.
    for (let i = 0; i < 20; i++) expect(await l.acquire(1, undefined, 'big')).toBe(true);
    l.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: quota exceeded' }, 'big');
    const started = Date.now();
    const settled: boolean[] = [];
    const turns: { turnInMs: number; cause: string }[] = [];
    const broadcast = Array.from({ length: 180 }, () =>
      l.acquire(1, AbortSignal.timeout(5000), 'big', (turnInMs, cause) => turns.push({ turnInMs, cause })).then((ok) => settled.push(ok)),
    );
    await new Promise((r) => setTimeout(r, 50));
    // At about 10/s, 250 ms serve 2 or 3; the rest are refused before a 50 ms timer fires.
    expect(settled.filter((ok) => !ok).length).toBeGreaterThanOrEqual(170);
    expect(turns.length).toBe(settled.filter((ok) => !ok).length);
    expect(turns.every((t) => t.cause === 'slowed')).toBe(true);
    // Each its own turn, about 100 ms apart at 10/s, none past the slowdown's end (5 s from a half):
    // about 45 booked, the rest told to come back when it ends.
    const booked = turns.map((t) => t.turnInMs).filter((t) => t < 4900);
    expect(booked.length).toBeGreaterThanOrEqual(35);
    booked.slice(1).forEach((t, i) => expect(t - (booked[i] as number)).toBeGreaterThanOrEqual(80));
    expect(Math.max(...turns.map((t) => t.turnInMs))).toBeLessThanOrEqual(5000);
    // Another app is not slowed, nor held behind them.
    for (let i = 0; i < 20; i++) expect(await l.acquire(1, undefined, 'other')).toBe(true);
    expect(Date.now() - started).toBeLessThan(300);
    await Promise.all(broadcast);
  });

  it('a provider overload slows this process down', async () => {
    const store = new MemoryRateLimitStore();
    const l = await limiter(store);
    const before = (await drive(l, 300, 1)).length;
    l.observe({ kind: 'transient', reason: 'ServiceUnavailable' }, 'demo');
    const after = (await drive(l, 300, 1)).length;
    expect(after).toBeLessThan(before * 0.8);
  });

  it('a Retry-After refuses that app\'s pushes at once (the pusher defers them) in every process, and no other app\'s', async () => {
    const store = new MemoryRateLimitStore();
    const registry = new Registry();
    const [got, other] = [await limiter(store, { registry }), await limiter(store)];
    const started = Date.now();
    got.observe({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', retryAfterMs: 600 }, 'a');
    // Refused, not held (it would stall other apps' pushes): the answer comes before a 20 ms timer
    // fires, which a stalled process delays as much as it delays the answer.
    const tooLate = new Promise<'held'>((r) => setTimeout(() => r('held'), 20));
    expect(await Promise.race([got.acquire(1, undefined, 'a'), tooLate])).toBe(false);
    // By app: HeraldAppPushesHeldBack reads it beside the app's deliveries.
    expect(await registry.getSingleMetricAsString('herald_rate_limit_held_total')).toContain('herald_rate_limit_held_total{platform="apns",app="a"} 1');
    /** What is left of the pause plus what has passed since: the Retry-After itself, whenever it is read. */
    const pauseSeen = (l: RateLimiter): number => l.pausedFor('a') + (Date.now() - started);
    expect(pauseSeen(got)).toBeGreaterThanOrEqual(590);
    expect(pauseSeen(got)).toBeLessThanOrEqual(610);
    expect(await got.acquire(1, undefined, 'b')).toBe(true);
    await new Promise((r) => setTimeout(r, 150)); // the other process's next refresh (refreshMs 100)
    expect(await other.acquire(1, undefined, 'a')).toBe(false);
    expect(pauseSeen(other)).toBeGreaterThanOrEqual(580);
    expect(pauseSeen(other)).toBeLessThanOrEqual(620);
    expect(await other.acquire(1, undefined, 'b')).toBe(true);
    await new Promise((r) => setTimeout(r, Math.max(0, started + 610 - Date.now())));
    expect(await got.acquire(1, undefined, 'a')).toBe(true);
    expect(await other.acquire(1, undefined, 'a')).toBe(true);
  });

  it("Web Push: a push service's Retry-After pauses the app's pushes to that service only, in every process; its overload slows down only pushes to it", async () => {
    const store = new MemoryRateLimitStore();
    const web = (extra: Partial<RateLimiterOptions> = {}) => limiter(store, { platform: 'web', ...extra });
    const [got, other] = [await web(), await web()];
    const [chrome, firefox] = ['fcm.googleapis.com', 'updates.push.services.mozilla.com'];
    // A 503's Retry-After (a 429's is one subscription's, RFC 8030 §8.4, and pauses nobody).
    got.observe({ kind: 'transient', reason: 'push service error: HTTP 503', retryAfterMs: 600 }, 'site', chrome);
    expect(await got.acquire(1, undefined, 'site', undefined, chrome)).toBe(false);
    expect(got.pausedFor('site', chrome)).toBeGreaterThan(500);
    expect(await got.acquire(1, undefined, 'site', undefined, firefox)).toBe(true);
    expect(got.pausedFor('site', firefox)).toBe(0);
    await new Promise((r) => setTimeout(r, 150)); // the other process's next refresh (refreshMs 100)
    expect(await other.acquire(1, undefined, 'site', undefined, chrome)).toBe(false);
    expect(await other.acquire(1, undefined, 'site', undefined, firefox)).toBe(true);

    // Its own store: the pause above, shared through the store, would hold this one's Chrome pushes.
    const overloaded = await limiter(new MemoryRateLimitStore(), { platform: 'web' });
    const rate = async (service: string) => {
      const until = Date.now() + 300;
      let n = 0;
      while (Date.now() < until) {
        if (await overloaded.acquire(1, AbortSignal.timeout(Math.max(1, until - Date.now() + 5)), 'site', undefined, service)) n++;
        await new Promise((r) => setImmediate(r));
      }
      return n;
    };
    const [chromeBefore, firefoxBefore] = [await rate(chrome), await rate(firefox)];
    overloaded.observe({ kind: 'transient', reason: 'HTTP 503' }, 'site', chrome);
    expect(await rate(chrome)).toBeLessThan(chromeBefore * 0.8);
    expect(await rate(firefox)).toBeGreaterThan(firefoxBefore * 0.8);
  });
});
