import { describe, expect, it } from 'vitest';
import { overdueConditions } from './scheduled-counts.ts';

describe('the scheduled-overdue conditions', () => {
  const now = Date.parse('2026-12-02T09:10:00Z');
  const overdue = (platform: 'apns' | 'fcm' | 'web', minutesAgo: number, count = 5) => ({ platform, count, earliestDueAt: new Date(now - minutesAgo * 60_000) });

  it('one per platform whose earliest stored push is due longer ago than the bound, naming what releases it', () => {
    const conditions = overdueConditions([overdue('apns', 10), overdue('web', 7, 100_000), overdue('fcm', 4)], now, 300_000);
    expect(conditions.map((c) => [c.alarm, c.queue, c.value, c.threshold])).toEqual([
      ['scheduled-overdue', 'scheduled.apns', 600, 300],
      ['scheduled-overdue', 'scheduled.web', 420, 300],
    ]);
    expect(conditions[0]?.summary).toBe('5 scheduled apns pushes are overdue, the earliest due 600 s ago: is the apns-descheduler running, and keeping up?');
    // Web pushes are released by the web-pusher: there is no web-descheduler.
    expect(conditions[1]?.summary).toBe('over 100000 scheduled web pushes are overdue, the earliest due 420 s ago: is the web-pusher running, and keeping up?');
  });
});
