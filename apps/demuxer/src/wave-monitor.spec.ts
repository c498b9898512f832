import { describe, expect, it } from 'vitest';
import { WaveMonitor } from './wave-monitor.ts';

const now = new Date('2030-01-01T08:00:00Z');
const at = (iso: string, n: number) => Array.from({ length: n }, () => ({ platform: 'apns' as const, dueAt: new Date(iso) }));

describe('WaveMonitor', () => {
  it('reports a platform window once, when it first exceeds rate × window', () => {
    const m = new WaveMonitor(10, 60); // 600 per minute
    expect(m.add(at('2030-01-01T09:00:10Z', 600), now)).toEqual([]);
    expect(m.add(at('2030-01-01T09:00:50Z', 2), now)).toEqual([
      { platform: 'apns', windowStart: new Date('2030-01-01T09:00:00Z'), count: 602, capacity: 600 },
    ]);
    expect(m.add(at('2030-01-01T09:00:20Z', 100), now)).toEqual([]);
  });

  it('counts windows and platforms separately', () => {
    const m = new WaveMonitor(1, 10);
    expect(m.add([...at('2030-01-01T09:00:05Z', 10), ...at('2030-01-01T09:00:15Z', 10)], now)).toEqual([]);
    expect(m.add([{ platform: 'fcm', dueAt: new Date('2030-01-01T09:00:05Z') }], now)).toEqual([]);
  });

  it('counts only windows within its horizon (a week), so a year of reminders spread minute by minute keeps a week of windows', () => {
    const m = new WaveMonitor(10, 60);
    const minute = 60_000;
    const year = Array.from({ length: 366 * 1440 }, (_, i) => ({ platform: 'apns' as const, dueAt: new Date(now.getTime() + i * minute) }));
    expect(m.add(year, now)).toEqual([]);
    expect(m.windows).toBe(7 * 1440 + 1);
    // A window past the horizon is not counted, however full.
    expect(m.add(at('2030-03-01T09:00:10Z', 700), now)).toEqual([]);
    expect(m.windows).toBe(7 * 1440 + 1);
    // Windows passed are forgotten as time goes on.
    m.add([], new Date(now.getTime() + 2 * 86_400_000));
    expect(m.windows).toBe(5 * 1440 + 2);
  });
});

