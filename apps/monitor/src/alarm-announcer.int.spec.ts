import { createAnnouncedAlarmStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { Alarm } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { alarmAnnouncer } from './alarm-announcer.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('alarmannounce');
});
afterAll(() => t.drop());

const alarmOf = (alarm: Alarm['alarm'], queue: string, firedAt: number): Alarm => ({ alarm, queue, summary: `${alarm} on ${queue}`, value: 5, threshold: 1, since: firedAt - 1_000, firedAt });
const SETTLE_MS = 60_000;

/** One monitor instance's announcer on the schema's store, with what it logged (firing: warn, resolved: info). */
function instance(store = createAnnouncedAlarmStore(t.db.kysely)) {
  const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
  const said = (level: 'warn' | 'info') => vi.spyOn(logger, level);
  const warned = said('warn');
  const informed = said('info');
  const announcer = alarmAnnouncer({ vhost: 'v', logger, metrics: createMonitorMetrics(new Registry()), webhook: undefined, announces: () => true, store, settleAfterMs: SETTLE_MS });
  const lines = (): string[] =>
    [...warned.mock.calls, ...informed.mock.calls].flatMap(([fields, msg]) => (typeof msg === 'string' && msg.startsWith('alarm ') ? [`${(fields as { state: string }).state} ${(fields as { alarm: string }).alarm} ${(fields as { queue: string }).queue}`] : []));
  return { announcer, lines, warned };
}
const kept = async (): Promise<string[]> => (await createAnnouncedAlarmStore(t.db.kysely).list()).map((a) => `${a.alarm} ${a.queue}`);

describe('alarms announced across monitor restarts and lease handovers (kept in PostgreSQL)', () => {
  it('a firing alarm is not said again by the next announcer, and one that ended while nobody announced is said resolved once its end is seen', async () => {
    const backlog = alarmOf('backlog', 'push.jobs', 1_000);
    const stalled = alarmOf('stalled', 'push.fcm.send', 2_000);
    const first = instance();
    first.announcer.announce({ state: 'firing', alarm: backlog, at: 1_000 });
    first.announcer.announce({ state: 'firing', alarm: stalled, at: 2_000 });
    await first.announcer.flush();
    expect(first.lines()).toEqual(['firing backlog push.jobs', 'firing stalled push.fcm.send']);
    expect(await kept()).toEqual(['backlog push.jobs', 'stalled push.fcm.send']);

    // The monitor restarts: the backlog still fires here, the stalled queue recovered meanwhile.
    const next = instance();
    await next.announcer.takeOver(() => [alarmOf('backlog', 'push.jobs', 90_000)], 100_000);
    expect(next.lines()).toEqual([]);
    const holds = (a: { alarm: string }) => a.alarm === 'backlog';
    // Not before this instance has polled a few times and read the scheduled pushes since.
    for (const at of [105_000, 110_000, 115_000, 150_000]) next.announcer.settle(at, holds);
    expect(next.lines()).toEqual([]);
    next.announcer.settle(100_000 + SETTLE_MS, holds);
    next.announcer.settle(100_000 + SETTLE_MS + 5_000, holds);
    expect(next.lines()).toEqual(['resolved stalled push.fcm.send']);
    await next.announcer.flush();
    expect(await kept()).toEqual(['backlog push.jobs']);

    next.announcer.announce({ state: 'resolved', alarm: backlog, at: 200_000 });
    await next.announcer.flush();
    expect(await kept()).toEqual([]);
  });

  it('an alarm taken over whose condition still holds is not said resolved; when it fires here it is not said again, and is kept with the new numbers', async () => {
    const parked = alarmOf('parked-growing', 'push.apns.send.parked', 1_000);
    const first = instance();
    first.announcer.announce({ state: 'firing', alarm: parked, at: 1_000 });
    await first.announcer.flush();

    const next = instance();
    await next.announcer.takeOver(() => [], 10_000);
    for (let at = 10_000; at < 10_000 + 2 * SETTLE_MS; at += 5_000) next.announcer.settle(at, () => true);
    const refired = { ...parked, value: 9, firedAt: 200_000 };
    next.announcer.announce({ state: 'firing', alarm: refired, at: 200_000 });
    await next.announcer.flush();
    expect(next.lines()).toEqual([]);
    const [stored] = await createAnnouncedAlarmStore(t.db.kysely).list();
    expect(stored).toMatchObject({ alarm: 'parked-growing', value: 9, firedAt: 200_000 });
    // From now on it is this instance's own: its end is said as usual.
    next.announcer.announce({ state: 'resolved', alarm: refired, at: 210_000 });
    await next.announcer.flush();
    expect(next.lines()).toEqual(['resolved parked-growing push.apns.send.parked']);
    expect(await kept()).toEqual([]);
  });

  it('says again what fires when it cannot read what was announced before', async () => {
    const unreadable = instance(createAnnouncedAlarmStore(t.db.kysely.withSchema('herald_no_such_schema')));
    await unreadable.announcer.takeOver(() => [alarmOf('no-consumer', 'push.apns.send', 1_000)], 5_000);
    expect(unreadable.lines()).toEqual(['firing no-consumer push.apns.send']);
    expect(unreadable.warned).toHaveBeenCalledWith(expect.anything(), 'could not read the alarms announced before; saying again what fires');
  });
});
