import { MANAGEMENT_API } from '@herald/testing';
import { describe, expect, it } from 'vitest';
import { nodeConditions, resourceAlarmConditions } from './alarm-rules.ts';
import { createManagementApi, toNodes, type ManagementNode } from './management-api.ts';

describe("RabbitMQ's memory and disk alarms", () => {
  it("reads every node's resources from the management API (none in an alarm here, so no condition)", async () => {
    const nodes = await createManagementApi(MANAGEMENT_API).nodes();
    expect(nodes.length).toBeGreaterThan(0);
    for (const node of nodes) {
      expect(node).toMatchObject({ name: expect.stringMatching(/^rabbit@/) as unknown, running: true, partitions: [], memAlarm: false, diskFreeAlarm: false, memLimit: expect.any(Number) as unknown });
    }
    expect(resourceAlarmConditions(nodes)).toEqual([]);
    expect(nodeConditions(nodes, 30_000)).toEqual([]);
  });

  // The alarm blocks every publisher: the backlog and stalled alarms it causes showed without their cause.
  it('raises one condition a node in an alarm, on node.<name>, saying what it blocks and what to do', () => {
    const running = { running: true, partitions: [] };
    const conditions = resourceAlarmConditions([
      { name: 'rabbit@a', ...running, memAlarm: true, diskFreeAlarm: false, memUsed: 900 * 1_048_576, memLimit: 800 * 1_048_576 },
      { name: 'rabbit@b', ...running, memAlarm: false, diskFreeAlarm: true, diskFree: 40 * 1_048_576, diskFreeLimit: 50 * 1_048_576 },
      { name: 'rabbit@c', ...running, memAlarm: true, diskFreeAlarm: true },
      { name: 'rabbit@d', ...running, memAlarm: false, diskFreeAlarm: false },
    ]);
    expect(conditions.map((c) => [c.alarm, c.queue, c.forMs])).toEqual([
      ['rabbitmq-resource-alarm', 'node.rabbit@a', 0],
      ['rabbitmq-resource-alarm', 'node.rabbit@b', 0],
      ['rabbitmq-resource-alarm', 'node.rabbit@c', 0],
    ]);
    expect(conditions[0]?.summary).toMatch(/^RabbitMQ node rabbit@a is in a memory alarm \(900 MB used of its 800 MB watermark\): RabbitMQ blocks every publisher in the cluster meanwhile/);
    expect(conditions[1]?.summary).toMatch(/^RabbitMQ node rabbit@b is in a disk alarm \(40 MB free, its limit 50 MB\): .*free disk on the node$/);
    expect(conditions[2]?.summary).toMatch(/memory alarm .* \/ RabbitMQ node rabbit@c is in a disk alarm/);
  });
});

/**
 * GET /api/nodes (the columns the monitor asks for) of a three-node cluster: rabbit@a as this
 * machine's RabbitMQ 3.10.8 answered for itself (recorded; renamed, and its partition added),
 * rabbit@b a member that is stopped, as the management plugin lists one (rabbit_mgmt_wm_nodes:
 * name, type and running false, no statistics to add), rabbit@c cut off from rabbit@a.
 */
const CLUSTER_ANSWER = JSON.parse(`[
  {"partitions":["rabbit@c"],"mem_limit":10110473011,"mem_alarm":false,"disk_free_limit":50000000,"disk_free_alarm":false,"name":"rabbit@a","running":true,"mem_used":449777664,"disk_free":82122731520},
  {"name":"rabbit@b","type":"disc","running":false},
  {"partitions":["rabbit@a"],"mem_limit":10110473011,"mem_alarm":false,"disk_free_limit":50000000,"disk_free_alarm":false,"name":"rabbit@c","running":true,"mem_used":401018880,"disk_free":82122731520}
]`) as ManagementNode[];

// A stopped cluster node looked healthy: /api/nodes was read without its running column.
describe('RabbitMQ nodes down and partitions', () => {
  it('raises rabbitmq-node-down on node.<name> for a member not running, after the delay given, and rabbitmq-partition at once for each side reporting one', () => {
    const nodes = toNodes(CLUSTER_ANSWER);
    expect(nodes.map((n) => [n.name, n.running, n.partitions])).toEqual([
      ['rabbit@a', true, ['rabbit@c']],
      ['rabbit@b', false, []],
      ['rabbit@c', true, ['rabbit@a']],
    ]);
    // A stopped node reports no memory: not a resource alarm.
    expect(resourceAlarmConditions(nodes)).toEqual([]);
    const conditions = nodeConditions(nodes, 30_000);
    expect(conditions.map((c) => [c.alarm, c.queue, c.forMs])).toEqual([
      ['rabbitmq-node-down', 'node.rabbit@b', 30_000],
      ['rabbitmq-partition', 'node.rabbit@a', 0],
      ['rabbitmq-partition', 'node.rabbit@c', 0],
    ]);
    expect(conditions[0]?.summary).toMatch(/^RabbitMQ node rabbit@b is a member of the cluster and not running: each quorum queue with a replica there has one fewer .*rabbitmqctl forget_cluster_node rabbit@b\)$/);
    expect(conditions[1]?.summary).toMatch(/^RabbitMQ node rabbit@a reports a network partition from rabbit@c: /);
  });

  it('logs a failover between the API URLs once, at warn, not at every poll while it lasts', async () => {
    const said: Array<{ fields: object; message: string }> = [];
    // The first node's API refuses connections (nothing listens on port 1): the second answers.
    const api = createManagementApi(`http://guest:guest@127.0.0.1:1/api,${MANAGEMENT_API}`, { log: { warn: (fields, message) => void said.push({ fields, message }) } });
    await Promise.all([api.queues('/'), api.nodes()]);
    await api.queues('/');
    await api.nodes();
    expect(said).toEqual([
      {
        fields: { failed: [expect.stringMatching(/^RabbitMQ management API unreachable at http:\/\/127\.0\.0\.1:1\/api: /)], answeredBy: expect.stringMatching(/^http:\/\/\S+\/api$/) },
        message: expect.stringMatching(/^RabbitMQ management API failed over from http:\/\/127\.0\.0\.1:1\/api to http:\/\/\S+\/api, asked first from now on$/),
      },
    ]);
    // Without the credentials the URLs carry.
    expect(JSON.stringify(said)).not.toContain('guest:');
  });
});
