import { describe, expect, it } from 'vitest';
import { ReleaseSchedule } from './release-schedule.ts';

describe('ReleaseSchedule', () => {
  it('releases a grant evenly until its end, the first token at once', () => {
    const s = new ReleaseSchedule();
    s.reset(50, 1000, 1100);
    expect(s.take(1000)).toBe(1);
    expect(s.nextAt()).toBe(1002);
    expect(s.take(1010)).toBe(5);
    expect(s.take(1050)).toBe(20);
    expect(s.pending()).toBe(24);
    expect(s.take(1099)).toBe(24);
    expect(s.pending()).toBe(0);
  });

  it('never releases more in any 20 ms than its share plus one token', () => {
    const s = new ReleaseSchedule();
    s.reset(50, 0, 100);
    const perMs = Array.from({ length: 100 }, (_, t) => s.take(t));
    for (let t = 0; t + 20 <= 100; t++) expect(perMs.slice(t, t + 20).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(11);
    expect(perMs.reduce((a, b) => a + b, 0)).toBe(50);
  });

  it('a late caller gets everything due; a new grant adds to the unreleased tokens; clear forgets them', () => {
    const s = new ReleaseSchedule();
    s.reset(10, 0, 100);
    s.take(0);
    s.reset(10, 50, 100); // one of the first grant was taken out: 9 still unreleased, plus 10
    expect(s.pending()).toBe(19);
    expect(s.take(500)).toBe(19);
    s.reset(5, 600, 700);
    s.clear();
    expect(s.pending()).toBe(0);
    expect(s.take(700)).toBe(0);
  });
});
