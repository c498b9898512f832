import { DeliverAt, JobAudience } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { deliverAtFromFlags, targetFromFlags, wholeNumber } from './send-options.ts';

describe('herald send schedule flags', () => {
  it('--deliver-at is an instant; --local-time with --date and --jitter a wall-clock time', () => {
    expect(deliverAtFromFlags({})).toBeUndefined();
    expect(deliverAtFromFlags({ deliverAt: '2030-01-01T08:00:00Z' })).toEqual({ at: '2030-01-01T08:00:00Z' });
    const local = deliverAtFromFlags({ localTime: '09:30', date: '2030-01-02', jitter: 'PT30M' });
    expect(local).toEqual({ localTime: '09:30', date: '2030-01-02', jitter: 'PT30M' });
    expect(DeliverAt.safeParse(local).success).toBe(true);
  });

  it('--expires-after goes with either kind, and alone is refused', () => {
    expect(deliverAtFromFlags({ localTime: '09:00', expiresAfter: 'PT2H' })).toEqual({ localTime: '09:00', expiresAfter: 'PT2H' });
    expect(deliverAtFromFlags({ deliverAt: '2030-01-01T08:00:00Z', expiresAfter: 'PT2H' })).toEqual({ at: '2030-01-01T08:00:00Z', expiresAfter: 'PT2H' });
    expect(() => deliverAtFromFlags({ expiresAfter: 'PT2H' })).toThrow('--expires-after goes with --deliver-at or --local-time');
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

  it('--user names users; --topic, --followers-of or --broadcast an audience, with its narrowing flags', () => {
    expect(targetFromFlags({ user: ['u1'] })).toEqual({ userId: 'u1' });
    expect(targetFromFlags({ user: ['u1', 'u2'] })).toEqual({ userIds: ['u1', 'u2'] });
    expect(targetFromFlags({ topic: 'news', segment: 'platform = "apns"' })).toEqual({ audience: { topic: 'news', segment: 'platform = "apns"' } });
    const followers = targetFromFlags({ followersOf: 'star', activeWithinDays: '7', mostRecent: '100' });
    expect(followers).toEqual({ audience: { followersOf: 'star', activeWithinDays: 7, mostRecent: 100 } });
    expect(JobAudience.safeParse('audience' in followers && followers.audience).success).toBe(true);
    expect(targetFromFlags({ broadcast: true })).toEqual({ audience: { broadcast: true } });
  });

  it('refuses no target, two targets, and narrowing flags without what they narrow', () => {
    expect(() => targetFromFlags({})).toThrow('give exactly one of --user, --topic, --followers-of or --broadcast');
    expect(() => targetFromFlags({ user: ['u1'], topic: 'news' })).toThrow(/exactly one/);
    expect(() => targetFromFlags({ topic: 'news', broadcast: true })).toThrow(/exactly one/);
    expect(() => targetFromFlags({ user: ['u1'], segment: 'platform = "apns"' })).toThrow(/--segment goes with/);
    expect(() => targetFromFlags({ topic: 'news', mostRecent: '5' })).toThrow(/go with --followers-of/);
    expect(() => targetFromFlags({ followersOf: 'star', mostRecent: 'five' })).toThrow('--most-recent must be a whole number, got "five"');
  });
});
