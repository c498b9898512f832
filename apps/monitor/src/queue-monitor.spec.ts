import { activeConditions, thresholdConfig, type QueueSnapshot } from '@herald/monitoring';
import { describe, expect, it } from 'vitest';
import { withLive } from './queue-monitor.ts';

const snapshot = (name: string, kind: QueueSnapshot['kind'], ready: number, unacked = 0): QueueSnapshot => ({
  name, kind, messages: ready + unacked, ready, unacked, consumers: 0, publishRate: 0, ackRate: 0, deliverRate: 0, headAgeSeconds: undefined,
});

describe('live counts laid over the management statistics', () => {
  it("an operator listing a parked queue (its messages held unacked a moment) does not make it read emptier, nor parked-growing fire after", () => {
    const thresholds = thresholdConfig();
    const parked = 'push.apns.send.parked';
    // The statistics (a few seconds old) say 50 ready; the live count sees the listing's read: 0 ready.
    const during = withLive(snapshot(parked, 'parked', 50), { ready: 0, consumers: 0 });
    expect(during.messages).toBe(50);
    // The next poll, the listing done: 50 again. Against a window whose smallest depth is 50, nothing grew.
    const after = withLive(snapshot(parked, 'parked', 50), { ready: 50, consumers: 0 });
    const conditions = activeConditions({ queues: [after], thresholds, parkedBaseline: () => during.messages });
    expect(conditions.filter((c) => c.alarm === 'parked-growing')).toEqual([]);
    // Just after the listing: ready again live, the statistics (sampled during it) still saying 50 unacked: 50, not 100.
    const justAfter = withLive(snapshot(parked, 'parked', 0, 50), { ready: 50, consumers: 0 });
    expect(justAfter.messages).toBe(50);
    expect(activeConditions({ queues: [justAfter], thresholds, parkedBaseline: () => 50 }).filter((c) => c.alarm === 'parked-growing')).toEqual([]);
    // A message parked since does show at once.
    expect(withLive(snapshot(parked, 'parked', 50), { ready: 51, consumers: 0 }).messages).toBe(51);
  });

  it('a work queue reads its live depth, drained or not, and its live consumers', () => {
    expect(withLive(snapshot('push.apns.send', 'work', 900, 100), { ready: 0, consumers: 2 })).toMatchObject({ ready: 0, messages: 100, consumers: 2 });
  });
});
