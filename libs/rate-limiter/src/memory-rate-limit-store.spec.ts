import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from './memory-rate-limit-store.ts';

const WINDOW_MS = 100;
const key = { platform: 'apns' } as const;

/** A store on a clock the test moves (ms since the epoch; window n is [100n, 100n + 100)). */
function storeAt(ratePerSec: number): { at(ms: number): MemoryRateLimitStore } {
  let now = 0;
  const store = new MemoryRateLimitStore(() => now);
  store.set(key, ratePerSec);
  return { at: (ms) => ((now = ms), store) };
}

const granted = async (store: MemoryRateLimitStore, want: number): Promise<number | undefined> =>
  (await store.lease(key, want, WINDOW_MS))?.granted;

describe('MemoryRateLimitStore (the lease rules the PostgreSQL store implements)', () => {
  it('a window hands out its share at most, then nothing until the next window', async () => {
    const { at } = storeAt(500); // 50 per window
    expect(await granted(at(1_000), 30)).toBe(30);
    expect(await granted(at(1_001), 30)).toBe(20);
    expect(await granted(at(1_002), 30)).toBe(0);
    expect(await granted(at(1_100), 30)).toBe(30);
  });

  it('one lease late in a window gets no more than the share of the time left', async () => {
    const { at } = storeAt(500);
    // A pusher starting with 10 ms of the window to go: a tenth of the share, not all 50 tokens
    // to spend in those 10 ms and then 50 more as the next window opens.
    expect(await granted(at(2_090), 1_000)).toBe(5);
    expect(await granted(at(2_095), 1_000)).toBe(3);
    expect(await granted(at(2_100), 1_000)).toBe(50);
    // A quarter gone: ⌈37.5⌉; what the window has left still bounds it.
    expect(await granted(at(4_025), 1_000)).toBe(38);
    expect(await granted(at(4_030), 1_000)).toBe(12);
    // Small leases through the window still get the whole share.
    for (let ms = 5_000; ms < 5_100; ms += 10) expect(await granted(at(ms), 5)).toBe(5);
    expect(await granted(at(5_099), 5)).toBe(0);
  });
});

describe('MemoryRateLimitStore pauses (the rules the PostgreSQL store implements)', () => {
  it('a pause lasts at least its time from the store\'s now, per platform and app; a shorter one keeps the longer', async () => {
    let now = 10_000;
    const store = new MemoryRateLimitStore(() => now);
    await store.pause({ platform: 'apns', app: 'a' }, 5_000);
    await store.pause({ platform: 'apns', app: 'a' }, 1_000);
    await store.pause({ platform: 'fcm', app: 'b' }, 2_000);
    now = 11_000;
    expect(await store.pauses('apns')).toEqual([{ app: 'a', msLeft: 4_000 }]);
    expect(await store.pauses('fcm')).toEqual([{ app: 'b', msLeft: 1_000 }]);
    now = 15_000;
    expect(await store.pauses('apns')).toEqual([]);
  });
});
