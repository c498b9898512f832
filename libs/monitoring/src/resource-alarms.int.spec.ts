import { MANAGEMENT_API } from '@herald/testing';
import { describe, expect, it } from 'vitest';
import { resourceAlarmConditions } from './alarm-rules.ts';
import { createManagementApi } from './management-api.ts';

describe("RabbitMQ's memory and disk alarms", () => {
  it("reads every node's resources from the management API (none in an alarm here, so no condition)", async () => {
    const nodes = await createManagementApi(MANAGEMENT_API).nodes();
    expect(nodes.length).toBeGreaterThan(0);
    for (const node of nodes) expect(node).toMatchObject({ name: expect.stringMatching(/^rabbit@/) as unknown, memAlarm: false, diskFreeAlarm: false, memLimit: expect.any(Number) as unknown });
    expect(resourceAlarmConditions(nodes)).toEqual([]);
  });

  // The alarm blocks every publisher: the backlog and stalled alarms it causes showed without their cause.
  it('raises one condition a node in an alarm, on node.<name>, saying what it blocks and what to do', () => {
    const conditions = resourceAlarmConditions([
      { name: 'rabbit@a', memAlarm: true, diskFreeAlarm: false, memUsed: 900 * 1_048_576, memLimit: 800 * 1_048_576 },
      { name: 'rabbit@b', memAlarm: false, diskFreeAlarm: true, diskFree: 40 * 1_048_576, diskFreeLimit: 50 * 1_048_576 },
      { name: 'rabbit@c', memAlarm: true, diskFreeAlarm: true },
      { name: 'rabbit@d', memAlarm: false, diskFreeAlarm: false },
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
