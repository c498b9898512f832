import { describe, expect, it } from 'vitest';
import { AppPauses } from './app-pauses.ts';

describe('AppPauses', () => {
  it('pauses one app, not the others, until its time has passed', () => {
    const p = new AppPauses();
    expect(p.extend('a', 5_000)).toBe(true);
    expect(p.msLeft('a', 1_000)).toBe(4_000);
    expect(p.msLeft('b', 1_000)).toBe(0);
    expect(p.msLeft('a', 5_000)).toBe(0);
  });

  it('only ever grows: a shorter pause does not cut a longer one short', () => {
    const p = new AppPauses();
    p.extend('a', 5_000);
    expect(p.extend('a', 3_000)).toBe(false);
    expect(p.endOf('a')).toBe(5_000);
    expect(p.extend('a', 7_000)).toBe(true);
    expect(p.msLeft('a', 0)).toBe(7_000);
  });

  it('prune forgets the pauses that have ended', () => {
    const p = new AppPauses();
    p.extend('a', 1_000);
    p.extend('b', 2_000);
    expect(p.prune(1_500)).toEqual(['a']);
    expect(p.endOf('a')).toBe(0);
    expect(p.endOf('b')).toBe(2_000);
  });
});
