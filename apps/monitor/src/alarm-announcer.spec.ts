import { createLogger } from '@herald/logging';
import type { Alarm } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { describe, expect, it, vi } from 'vitest';
import { alarmAnnouncer } from './alarm-announcer.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';

const alarm: Alarm = { alarm: 'backlog', queue: 'push.apns.send', summary: 'push.apns.send holds 20,000 messages', value: 20_000, threshold: 10_000, since: 0, firedAt: 0 };

describe('the alarm announcer', () => {
  it('announces only while it may, and says again what fires once it takes the lease (no store: nothing known of the announcer before)', async () => {
    const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
    const warned = vi.spyOn(logger, 'warn');
    let may = false;
    const registry = new Registry();
    const announcer = alarmAnnouncer({ vhost: 'v', logger, metrics: createMonitorMetrics(registry), webhook: undefined, announces: () => may });
    announcer.announce({ state: 'firing', alarm, at: 1 });
    expect(warned).not.toHaveBeenCalled(); // another instance holds the lease (or died holding it)
    may = true;
    await announcer.takeOver(() => [alarm], 2);
    expect(warned.mock.calls.map(([fields]) => fields)).toEqual([expect.objectContaining({ alarm: 'backlog', queue: 'push.apns.send', state: 'firing' })]);
    // Said again, not raised again: the counter of alarms raised saw it once.
    expect(await registry.getSingleMetricAsString('herald_alarms_raised_total')).toMatch(/herald_alarms_raised_total\{[^}]*alarm="backlog"[^}]*\} 1$/m);
  });
});
