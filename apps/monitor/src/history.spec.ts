import type { QueueSnapshot } from '@herald/monitoring';
import { describe, expect, it } from 'vitest';
import { History } from './history.ts';

const q = (name: string, messages: number): QueueSnapshot => ({
  name,
  kind: name.endsWith('.parked') ? 'parked' : 'work',
  messages,
  ready: messages,
  unacked: 0,
  consumers: 0,
  publishRate: 0,
  ackRate: 0,
  deliverRate: 0,
  headAgeSeconds: undefined,
});

describe('history ring', () => {
  it('forgets samples older than its retention', () => {
    const h = new History(10_000);
    h.add(0, [q('a', 5)]);
    h.add(5_000, [q('a', 7)]);
    h.add(12_000, [q('a', 9)]);
    expect(h.minSince('a', 0)).toBe(7);
    expect(h.minSince('a', 6_000)).toBe(9);
    expect(h.minSince('b', 0)).toBeUndefined();
  });

  it('series keeps each time bucket\'s peak, oldest first', () => {
    const h = new History(3_600_000);
    for (let t = 0; t < 10; t++) h.add(1_000_000 + t * 100, [q('a', t % 3 === 0 ? 50 : t)]);
    const s = h.series(1_001_000, 1_000, 2);
    expect(s.queues['a']).toEqual([
      [1_000_000, 50],
      [1_000_500, 50],
    ]);
  });
});
