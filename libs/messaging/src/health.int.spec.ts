import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managementRequest as mgmt, waitFor } from '@herald/testing';
import { consumingConnectionName } from './broker.ts';
import { forceCloseConnection, recordingHandler, startTestBroker, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import type { Consumer } from './types.ts';

/** What a process's /readyz is built on: its RabbitMQ connections open and its consumers subscribed. */
describe('broker health', () => {
  let t: TestBroker;
  const consumers: Consumer[] = [];
  const permissions = () => `/permissions/${encodeURIComponent(t.vhost.name)}/guest`;

  beforeAll(async () => {
    t = await startTestBroker('msg-health');
  });
  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.stop(1_000)));
    await t.teardown();
  });

  async function consume(queue: string): Promise<void> {
    await t.broker.applyTopology(workQueueTopology(queue, 'h.exchange'));
    consumers.push(await t.broker.consume({ queue, prefetch: 1, retryDelaysMs: [1_000], handle: recordingHandler().handle }));
  }

  it('is ready while consuming; a consumer whose queue was deleted is named until it consumes again', async () => {
    await consume('h.kept');
    await consume('h.deleted');
    expect(t.broker.health()).toEqual({ ready: true, problems: [] });

    const res = await mgmt('DELETE', `/queues/${encodeURIComponent(t.vhost.name)}/h.deleted`);
    expect(res.ok).toBe(true);
    const down = await waitFor('the deleted queue named', () => {
      const h = t.broker.health();
      return h.ready ? undefined : h;
    });
    expect(down.problems).toHaveLength(1);
    expect(down.problems[0]).toMatch(/^not consuming from "h\.deleted" since \d{4}-\d\d-\d\dT.*Z; re-subscribing$/);

    await t.broker.applyTopology(workQueueTopology('h.deleted', 'h.exchange'));
    await waitFor('consuming again', () => t.broker.health().ready, { timeoutMs: 10_000 });
    expect(t.broker.health().problems).toEqual([]);
  });

  it('names a lost connection while it cannot be re-opened, and is ready once it is back', async () => {
    await consume('h.conn');
    expect(t.broker.health().ready).toBe(true);
    // Without permission on the vhost every re-open is refused, so the loss lasts until it is given back.
    await mgmt('DELETE', permissions());
    try {
      await forceCloseConnection(t.vhost.name, consumingConnectionName(t.connectionName));
      const down = await waitFor('the lost connection named', () => {
        const h = t.broker.health();
        return h.problems.some((p) => p.startsWith('RabbitMQ connection')) ? h : undefined;
      });
      expect(down.ready).toBe(false);
      expect(down.problems).toContainEqual(expect.stringMatching(new RegExp(`^RabbitMQ connection "${consumingConnectionName(t.connectionName)}" lost at \\d{4}-.*Z; reconnecting$`)));
      // Its consumers went with it; the publishing connection is still open and not named.
      expect(down.problems.some((p) => p.includes(`"${t.connectionName}"`))).toBe(false);
    } finally {
      await mgmt('PUT', permissions(), { configure: '.*', write: '.*', read: '.*' });
    }
    await waitFor('connected and consuming again', () => t.broker.health().ready, { timeoutMs: 30_000 });
  });
});
