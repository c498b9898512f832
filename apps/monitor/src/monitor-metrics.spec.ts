import { pushesPerMessage } from '@herald/contracts';
import { toSnapshot } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { describe, expect, it } from 'vitest';
import { createMonitorMetrics } from './monitor-metrics.ts';

/** A queue as the management API reports it, with the monitor's age estimate. */
const queue = (name: string, messages: number) => ({ ...toSnapshot({ name, messages_ready: messages }, 0), oldestAgeSeconds: 0 });

async function gauge(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels['queue']), v.value]));
}

describe('the monitor’s queue metrics', () => {
  it('herald_queue_backlog counts what the backlog alarm counts: up to PUSH_PACK_SIZE pushes a send-queue message, messages elsewhere', async () => {
    const registry = new Registry();
    const metrics = createMonitorMetrics(registry);
    const queues = [queue('push.apns.send', 50), queue('push.jobs', 30), queue('push.apns.send.parked', 4)];
    metrics.recordQueues(queues, pushesPerMessage(10));
    expect(await gauge(registry, 'herald_queue_backlog')).toEqual({ 'push.apns.send': 500, 'push.jobs': 30, 'push.apns.send.parked': 4 });
    expect(await gauge(registry, 'herald_queue_messages')).toEqual({ 'push.apns.send': 50, 'push.jobs': 30, 'push.apns.send.parked': 4 });
    // Without packing (PUSH_PACK_SIZE 1) the two are the same.
    metrics.recordQueues(queues);
    expect(await gauge(registry, 'herald_queue_backlog')).toEqual({ 'push.apns.send': 50, 'push.jobs': 30, 'push.apns.send.parked': 4 });
  });

  it('herald_monitor_blind is 1 until a poll of the management API succeeds, 1 again after one fails, and the polls are counted by outcome', async () => {
    const registry = new Registry();
    const metrics = createMonitorMetrics(registry);
    const value = async (name: string) => (await registry.getMetricsAsJSON()).find((m) => m.name === name)?.values.map((v) => [v.labels['outcome'] ?? '', v.value]);
    expect(await value('herald_monitor_blind')).toEqual([['', 1]]);
    metrics.recordPoll('ok');
    expect(await value('herald_monitor_blind')).toEqual([['', 0]]);
    metrics.recordPoll('failed');
    expect(await value('herald_monitor_blind')).toEqual([['', 1]]);
    expect(await value('herald_monitor_polls_total')).toEqual([['ok', 1], ['failed', 1]]);
  });
});
