import { DeliverAt } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { deliverAtFromFlags, wholeNumber } from './send-options.ts';

describe('herald send schedule flags', () => {
  it('--deliver-at is an instant; --local-time with --date and --jitter a wall-clock time', () => {
    expect(deliverAtFromFlags({})).toBeUndefined();
    expect(deliverAtFromFlags({ deliverAt: '2030-01-01T08:00:00Z' })).toEqual({ at: '2030-01-01T08:00:00Z' });
    const local = deliverAtFromFlags({ localTime: '09:30', date: '2030-01-02', jitter: 'PT30M' });
    expect(local).toEqual({ localTime: '09:30', date: '2030-01-02', jitter: 'PT30M' });
    expect(DeliverAt.safeParse(local).success).toBe(true);
  });

  it('refuses both kinds at once, and --date or --jitter without --local-time', () => {
    expect(() => deliverAtFromFlags({ deliverAt: '2030-01-01T08:00:00Z', localTime: '09:00' })).toThrow(/not both/);
    expect(() => deliverAtFromFlags({ date: '2030-01-02' })).toThrow(/go with --local-time/);
    expect(() => deliverAtFromFlags({ jitter: 'PT1M' })).toThrow(/go with --local-time/);
  });

  it('number flags must be whole numbers, named in the error', () => {
    expect(wholeNumber('--badge', '3')).toBe(3);
    expect(() => wholeNumber('--badge', 'three')).toThrow('--badge must be a whole number, got "three"');
    expect(() => wholeNumber('--ttl', '-1')).toThrow(/--ttl/);
    expect(() => wholeNumber('--ttl', '1.5')).toThrow(/--ttl/);
  });
});
