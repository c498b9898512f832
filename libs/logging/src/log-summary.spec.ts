import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LOG_SUMMARY_INTERVAL_MS, flushLogSummaries, logSummary } from './log-summary.ts';

/** A logger whose lines are read back as objects. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ base: undefined, timestamp: false }, out), lines };
}
const flushed = () => new Promise((r) => setImmediate(r));

describe('logSummary: a line an outage writes per push, written once per kind and interval', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] }));
  afterEach(() => vi.useRealTimers());

  it('logs the first of each kind at once, then once more with how many were held back, and starts again after', async () => {
    const { logger, lines } = capture();
    const parks = logSummary(logger, 'warn', 'push parked');
    for (let i = 0; i < 5; i++) parks.note('shop|app-banned', { app: 'shop', code: 'app-banned', pushId: `p${i}` });
    parks.note('news|app-disabled', { app: 'news', code: 'app-disabled', pushId: 'q0' });
    await flushed();
    expect(lines.map((l) => [l['msg'], l['app'], l['pushId'], l['repeated']])).toEqual([
      ['push parked', 'shop', 'p0', undefined],
      ['push parked', 'news', 'q0', undefined],
    ]);
    vi.advanceTimersByTime(LOG_SUMMARY_INTERVAL_MS);
    await flushed();
    // Only kinds that repeated: the last line held back, with the count; news had one, said already.
    expect(lines.slice(2)).toEqual([{ level: 40, msg: 'push parked', app: 'shop', code: 'app-banned', pushId: 'p4', repeated: 4, overMs: LOG_SUMMARY_INTERVAL_MS }]);
    parks.note('shop|app-banned', { app: 'shop', code: 'app-banned', pushId: 'p5' });
    await flushed();
    expect(lines.at(-1)?.['pushId']).toBe('p5');
    expect(lines).toHaveLength(4);
  });

  it('is one summary per logger and message, however many callers ask for it', async () => {
    const { logger, lines } = capture();
    logSummary(logger, 'info', 'message scheduled for retry').note('q|x', { n: 1 });
    logSummary(logger, 'info', 'message scheduled for retry').note('q|x', { n: 2 });
    logSummary(logger, 'info', 'another line').note('q|x', { n: 3 });
    await flushed();
    expect(lines.map((l) => l['n'])).toEqual([1, 3]);
  });

  it('writes the counts held back when asked before an exit (flushLogSummaries), and then holds none', async () => {
    const { logger, lines } = capture();
    const failures = logSummary(logger, 'warn', 'fcm send failed in transport');
    failures.note('shop|ECONNRESET', { app: 'shop', n: 1 });
    vi.advanceTimersByTime(3_000);
    failures.note('shop|ECONNRESET', { app: 'shop', n: 2 });
    flushLogSummaries();
    vi.advanceTimersByTime(LOG_SUMMARY_INTERVAL_MS);
    await flushed();
    expect(lines.map((l) => [l['n'], l['repeated'], l['overMs']])).toEqual([
      [1, undefined, undefined],
      [2, 1, 3_000],
    ]);
  });

  it('counts kinds past the thousandth in one line that names none, over the time since the first of them', async () => {
    const { logger, lines } = capture();
    const parks = logSummary(logger, 'warn', 'push parked (many apps)');
    for (let i = 0; i < 1_000; i++) parks.note(`app-${i}`, { app: `app-${i}` });
    vi.advanceTimersByTime(2_000);
    parks.note('news', { app: 'news' });
    parks.note('shop', { app: 'shop' });
    vi.advanceTimersByTime(1_000);
    flushLogSummaries();
    await flushed();
    expect(lines).toHaveLength(1_001);
    expect(lines.at(-1)).toEqual({ level: 40, msg: 'push parked (many apps)', repeated: 2, kinds: 'more than 1000', overMs: 1_000 });
  });
});
