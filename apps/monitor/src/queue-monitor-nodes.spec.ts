import { thresholdConfig, type AlarmTransition, type NodeResources } from '@herald/monitoring';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { waitFor } from '@herald/testing';
import { describe, expect, it } from 'vitest';
import { History } from './history.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { startQueueMonitor } from './queue-monitor.ts';

const logger = createLogger({ service: 'spec', level: 'silent' });

describe("the monitor and RabbitMQ's resource alarms", () => {
  it('raises rabbitmq-resource-alarm for a node in a memory alarm, and polls on when the nodes cannot be read', async () => {
    let nodes: () => Promise<NodeResources[]> = async () => [{ name: 'rabbit@a', running: true, partitions: [], memAlarm: true, diskFreeAlarm: false }];
    const said: AlarmTransition[] = [];
    const monitor = startQueueMonitor({
      api: { queues: async () => [], nodes: () => nodes() },
      vhost: '/',
      pollMs: 20,
      thresholds: thresholdConfig(),
      history: new History(60_000),
      metrics: createMonitorMetrics(new Registry()),
      logger,
      announce: (t) => void said.push(t),
    });
    try {
      const fired = await waitFor('the alarm', () => said.find((t) => t.alarm.alarm === 'rabbitmq-resource-alarm' && t.state === 'firing'));
      expect(fired.alarm.queue).toBe('node.rabbit@a');
      // A management user without the monitoring tag: the queues are still read, the alarm's state kept.
      nodes = () => Promise.reject(new Error('RabbitMQ management API answered 403 for /nodes'));
      const polledAt = monitor.state().at;
      await waitFor('a later poll', () => (monitor.state().at !== polledAt ? true : undefined));
      expect(monitor.state().error).toBeNull();
      nodes = async () => [{ name: 'rabbit@a', running: true, partitions: [], memAlarm: false, diskFreeAlarm: false }];
      await waitFor('resolved', () => said.find((t) => t.alarm.alarm === 'rabbitmq-resource-alarm' && t.state === 'resolved'));
    } finally {
      await monitor.stop();
    }
  });

  // A stopped cluster node looked healthy: no alarm said so.
  it('raises rabbitmq-node-down for a cluster member not running once it has been down for the "*" no-consumer delay, and clears it when it runs', async () => {
    const node = (name: string, running: boolean): NodeResources => ({ name, running, partitions: [], memAlarm: false, diskFreeAlarm: false });
    let running = false;
    const said: AlarmTransition[] = [];
    const started = Date.now();
    const monitor = startQueueMonitor({
      api: { queues: async () => [], nodes: async () => [node('rabbit@b', true), node('rabbit@c', running)] },
      vhost: '/',
      pollMs: 20,
      thresholds: thresholdConfig({ '*': { noConsumerForMs: 300 } }),
      history: new History(60_000),
      metrics: createMonitorMetrics(new Registry()),
      logger,
      announce: (t) => void said.push(t),
    });
    try {
      const fired = await waitFor('the alarm', () => said.find((t) => t.alarm.alarm === 'rabbitmq-node-down' && t.state === 'firing'));
      expect(fired.at - started).toBeGreaterThanOrEqual(300);
      expect(fired.alarm.queue).toBe('node.rabbit@c');
      running = true;
      await waitFor('resolved', () => said.find((t) => t.alarm.alarm === 'rabbitmq-node-down' && t.state === 'resolved'));
      expect(said.map((t) => [t.alarm.alarm, t.alarm.queue, t.state])).toEqual([
        ['rabbitmq-node-down', 'node.rabbit@c', 'firing'],
        ['rabbitmq-node-down', 'node.rabbit@c', 'resolved'],
      ]);
    } finally {
      await monitor.stop();
    }
  });
});
