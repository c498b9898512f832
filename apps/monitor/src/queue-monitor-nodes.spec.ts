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
    let nodes: () => Promise<NodeResources[]> = async () => [{ name: 'rabbit@a', memAlarm: true, diskFreeAlarm: false }];
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
      nodes = async () => [{ name: 'rabbit@a', memAlarm: false, diskFreeAlarm: false }];
      await waitFor('resolved', () => said.find((t) => t.alarm.alarm === 'rabbitmq-resource-alarm' && t.state === 'resolved'));
    } finally {
      await monitor.stop();
    }
  });
});
