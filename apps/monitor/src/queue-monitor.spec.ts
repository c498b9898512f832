import { createLogger } from '@herald/logging';
import { activeConditions, thresholdConfig, type AlarmTransition, type QueueSnapshot } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { waitFor } from '@herald/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { History } from './history.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { startQueueMonitor, withLive } from './queue-monitor.ts';

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

// A quorum queue reports no head timestamp: the alarm goes by the monitor's own estimate.
describe("the oldest-message alarm on the monitor's estimate", () => {
  it('fires once a work queue seen filling has held a message for oldestAgeSeconds, a few acks notwithstanding, and clears when it empties', async () => {
    let depth = 0;
    const said: AlarmTransition[] = [];
    const monitor = startQueueMonitor({
      // A registrar acking a little, far slower than it would take to drain.
      api: { queues: async () => [{ ...snapshot('push.registrations', 'work', 0, depth), consumers: 1, ackRate: depth === 0 ? 0 : 0.2 }] },
      vhost: '/',
      pollMs: 20,
      thresholds: thresholdConfig({ '*': { oldestAgeSeconds: 1, oldestAgeForMs: 0 } }),
      history: new History(60_000),
      metrics: createMonitorMetrics(new Registry()),
      logger: createLogger({ service: 'spec', level: 'silent' }),
      announce: (t) => void said.push(t),
    });
    try {
      await waitFor('a poll of the empty queue', () => monitor.state().at !== null);
      depth = 5;
      const filled = Date.now();
      const fired = await waitFor('the alarm', () => said.find((t) => t.alarm.alarm === 'oldest-message' && t.state === 'firing'));
      expect(fired.at - filled).toBeGreaterThanOrEqual(1_000);
      expect(fired.alarm).toMatchObject({ queue: 'push.registrations', threshold: 1 });
      expect(fired.alarm.summary).toMatch(/^push\.registrations's oldest message has waited \d+ s \(bound 1 s\): 5 messages, 1 consumers, 0\.2 acks\/s$/);
      depth = 0;
      await waitFor('resolved', () => said.find((t) => t.alarm.alarm === 'oldest-message' && t.state === 'resolved'));
    } finally {
      await monitor.stop();
    }
  });
});

// A pusher's prefetch held unacked all the time: the queue is never seen empty, so the time since it
// was is hours. The polls run on fake timers, every 5 s, against the default bound (300 s, for 60 s).
describe('the oldest-message estimate through a pause in a busy queue\'s acks', () => {
  afterEach(() => void vi.useRealTimers());

  /** push.apns.send holding 50 messages unacked, 2 consumers acking 10 a second (50 / 10: 5 s to drain) until told otherwise. */
  function busyQueue() {
    vi.useFakeTimers();
    let ackRate = 10;
    const said: AlarmTransition[] = [];
    const monitor = startQueueMonitor({
      api: { queues: async () => [{ ...snapshot('push.apns.send', 'work', 0, 50), consumers: 2, ackRate }] },
      vhost: '/',
      pollMs: 5_000,
      thresholds: thresholdConfig(),
      history: new History(60_000),
      metrics: createMonitorMetrics(new Registry()),
      logger: createLogger({ service: 'spec', level: 'silent' }),
      announce: (t) => void said.push(t),
    });
    const oldest = () => said.filter((t) => t.alarm.alarm === 'oldest-message');
    return { monitor, oldest, acks: (rate: number) => void (ackRate = rate) };
  }

  it('a queue busy for an hour whose acks pause for 90 s (a PostgreSQL failover) raises no oldest-message: its oldest message has waited the drain time then plus the pause, not the hour', async () => {
    const q = busyQueue();
    try {
      await vi.advanceTimersByTimeAsync(3_600_000);
      q.acks(0);
      await vi.advanceTimersByTimeAsync(90_000);
      expect(q.monitor.state().queues[0]).toMatchObject({ oldestAgeSeconds: 95, oldestAgeIsLowerBound: false });
      q.acks(10);
      await vi.advanceTimersByTimeAsync(120_000);
      expect(q.monitor.state().queues[0]).toMatchObject({ oldestAgeSeconds: 5 });
      expect(q.oldest()).toEqual([]);
    } finally {
      await q.monitor.stop();
    }
  });

  // RabbitMQ's rate for the poll that catches acks stopping is a part of an interval's: 0.1/s read as
  // a 500 s drain held through the pause, and a minute's pause fired oldest-message.
  it("a rate sampled as the acks stop does not make the drain time before the pause many times what it was", async () => {
    const q = busyQueue();
    try {
      await vi.advanceTimersByTimeAsync(3_600_000);
      q.acks(0.1);
      await vi.advanceTimersByTimeAsync(5_000);
      q.acks(0);
      await vi.advanceTimersByTimeAsync(90_000);
      expect(q.monitor.state().queues[0]?.oldestAgeSeconds).toBeLessThanOrEqual(100);
      expect(q.oldest()).toEqual([]);
    } finally {
      await q.monitor.stop();
    }
  });

  // Bounded by the last bounded reading, one burst of acks (1,000/s as consumers came back) held the
  // estimate at a few seconds, growing a second a second, while the queue's drain time was 500 s.
  it('a reading too low for one poll does not hold the estimate down after it', async () => {
    const q = busyQueue();
    try {
      await vi.advanceTimersByTimeAsync(600_000);
      q.acks(0.1); // 50 messages at 0.1/s: a 500 s drain
      await vi.advanceTimersByTimeAsync(60_000);
      q.acks(1_000);
      await vi.advanceTimersByTimeAsync(5_000);
      q.acks(0.1);
      await vi.advanceTimersByTimeAsync(15_000);
      expect(q.monitor.state().queues[0]?.oldestAgeSeconds).toBeGreaterThanOrEqual(400);
    } finally {
      await q.monitor.stop();
    }
  });

  it('fires once its consumers have acked nothing for longer than the bound, with the age since their last acks', async () => {
    const q = busyQueue();
    try {
      await vi.advanceTimersByTimeAsync(3_600_000);
      const stopped = Date.now();
      q.acks(0);
      await vi.advanceTimersByTimeAsync(420_000);
      const [fired, ...more] = q.oldest();
      expect(more).toEqual([]);
      // Over 300 s at the poll 300 s in (5 + 300), then its minute.
      expect(fired?.state).toBe('firing');
      expect((fired?.at ?? 0) - stopped).toBe(360_000);
      expect(fired?.alarm).toMatchObject({ queue: 'push.apns.send', value: 365, threshold: 300 });
      expect(fired?.alarm.summary).toBe("push.apns.send's oldest message has waited 365 s (bound 300 s): 50 messages, 2 consumers, nothing being acked");
    } finally {
      await q.monitor.stop();
    }
  });
});

// Every replica exports its queue gauges and alarms; the Prometheus rules go by a replica's only while
// herald_monitor_blind says its view is current (infra/prometheus/alerts.yml).
describe('herald_monitor_blind', () => {
  afterEach(() => void vi.useRealTimers());

  it('is 1 after a failed poll, 0 only once a good poll has set the queue gauges, and 1 again when the polls fail (the gauges then kept as they were)', async () => {
    vi.useFakeTimers();
    const registry = new Registry();
    const read = async (name: string) => (await registry.getMetricsAsJSON()).find((m) => m.name === name)?.values.map((v) => v.value);
    let answer: () => Promise<QueueSnapshot[]> = () => Promise.reject(new Error('connect ETIMEDOUT'));
    let liveCounts: ((counts: Map<string, { ready: number; consumers: number }>) => void) | undefined;
    const monitor = startQueueMonitor({
      api: { queues: () => answer() },
      live: () => new Promise((resolve) => (liveCounts = resolve)),
      vhost: '/',
      pollMs: 5_000,
      thresholds: thresholdConfig(),
      history: new History(60_000),
      metrics: createMonitorMetrics(registry),
      logger: createLogger({ service: 'spec', level: 'silent' }),
      announce: () => undefined,
    });
    try {
      await vi.advanceTimersByTimeAsync(0);
      expect(monitor.state().error).toBe('connect ETIMEDOUT');
      expect(await read('herald_monitor_blind')).toEqual([1]);
      answer = async () => [snapshot('push.jobs', 'work', 7)];
      await vi.advanceTimersByTimeAsync(5_000);
      // Read, the live counts still awaited: the gauges do not hold this poll's view yet.
      expect(await read('herald_queue_messages')).toEqual([]);
      expect(await read('herald_monitor_blind')).toEqual([1]);
      liveCounts?.(new Map([['push.jobs', { ready: 9, consumers: 1 }]]));
      await vi.advanceTimersByTimeAsync(0);
      expect(await read('herald_queue_messages')).toEqual([9]);
      expect(await read('herald_monitor_blind')).toEqual([0]);
      answer = () => Promise.reject(new Error('connect ETIMEDOUT'));
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await read('herald_monitor_blind')).toEqual([1]);
      expect(await read('herald_queue_messages')).toEqual([9]);
    } finally {
      liveCounts?.(new Map()); // a read left waiting would hold stop() up
      await monitor.stop();
    }
  });
});
