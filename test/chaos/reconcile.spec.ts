import { describe, expect, it } from 'vitest';
import { pushKey, type ChaosDevice, type ChaosJob } from './chaos-plan.ts';
import { duplicateCause, expectedPushes, reconcile, type Observations } from './reconcile.ts';

const devices: ChaosDevice[] = [
  { userId: 'u1', platform: 'apns', token: 'ok-apns', kind: 'ok' },
  { userId: 'u1', platform: 'fcm', token: 'ok-fcm', kind: 'ok' },
  { userId: 'u2', platform: 'apns', token: 'flaky', kind: 'flaky' },
  { userId: 'u3', platform: 'fcm', token: 'dead', kind: 'dead' },
];
const jobs: ChaosJob[] = [
  { id: 'j1', userIds: ['u1', 'u2', 'u3'], atMs: 0 },
  { id: 'j2', userIds: ['u1'], atMs: 0, delayMs: 4000, expiresInMs: 1000 },
];
const LEASE = 3000;
const observations = (o: Partial<Observations>): Observations => ({
  deliveries: new Map(),
  parked: new Map(),
  parkedJobs: new Set(),
  pusherKills: [],
  retries: new Map(),
  leaseMs: LEASE,
  ...o,
});
const once = (at: number) => [{ at, answerLost: false }];
const delivered = () =>
  new Map([
    [pushKey('j1', 'ok-apns'), once(1000)],
    [pushKey('j1', 'ok-fcm'), once(1000)],
  ]);

describe('chaos reconciliation', () => {
  it('expects a push per live device of each job, with the fate its device and job give it; none to dead tokens', () => {
    expect(expectedPushes(jobs, devices).map((e) => `${e.key} ${e.fate}`)).toEqual([
      'j1|ok-apns deliver',
      'j1|ok-fcm deliver',
      'j1|flaky park',
      'j2|ok-apns expire',
      'j2|ok-fcm expire',
    ]);
  });

  it('accounts for every push: delivered, parked, expired', () => {
    const r = reconcile(expectedPushes(jobs, devices), observations({ deliveries: delivered(), parked: new Map([[pushKey('j1', 'flaky'), 1]]) }));
    expect(r).toMatchObject({ expected: 5, delivered: 2, parked: 1, expired: 2, lost: [], unexpected: [], duplicates: [] });
  });

  it('reports a push with no 200 and no parked copy as lost', () => {
    const deliveries = new Map([[pushKey('j1', 'ok-apns'), once(1000)]]);
    const r = reconcile(expectedPushes(jobs, devices), observations({ deliveries, parked: new Map([[pushKey('j1', 'flaky'), 1]]) }));
    expect(r.lost).toEqual(['j1|ok-fcm']);
  });

  it('counts a parked job as parked pushes, and flags sends that must not happen', () => {
    const deliveries = new Map([
      [pushKey('j2', 'ok-apns'), once(5000)],
      [pushKey('j1', 'dead'), once(1000)],
    ]);
    const r = reconcile(expectedPushes(jobs, devices), observations({ deliveries, parkedJobs: new Set(['j1']) }));
    expect(r.lost).toEqual([]);
    expect(r.parkedInsteadOfDelivered).toEqual(['j1|ok-apns', 'j1|ok-fcm']);
    expect(r.unexpected).toEqual(['j2|ok-apns (its job had expired)', 'j1|dead (no job of the plan implies it, or its token is dead)']);
  });

  it('allows a repeat only after a SIGKILL of that platform\'s pusher within one lease of the first send, or a lost answer', () => {
    const kills: Observations['pusherKills'] = [{ platform: 'apns', at: 10_000, respawnedAt: 10_500 }];
    const obs = { pusherKills: kills, leaseMs: LEASE };
    const sent = (...times: number[]) => times.map((at) => ({ at, answerLost: false }));
    expect(duplicateCause(sent(9_000, 14_000), 'apns', [], obs)).toBe('pusher-killed');
    expect(duplicateCause(sent(6_000, 14_000), 'apns', [], obs)).toBeUndefined(); // sent long before the kill
    expect(duplicateCause(sent(9_000, 9_500), 'apns', [], obs)).toBeUndefined(); // repeated before the kill
    expect(duplicateCause(sent(10_005, 14_000), 'apns', [], obs)).toBe('pusher-killed'); // recorded just after the kill, before the respawn
    expect(duplicateCause(sent(10_600, 14_000), 'apns', [], obs)).toBeUndefined(); // sent by the replacement
    expect(duplicateCause(sent(9_000, 14_000), 'fcm', [], obs)).toBeUndefined(); // the other pusher was killed
    expect(duplicateCause(sent(9_000, 14_000, 20_000), 'apns', [], obs)).toBeUndefined(); // a second repeat needs its own cause
    expect(duplicateCause([{ at: 5_000, answerLost: true }, { at: 5_400, answerLost: false }], 'fcm', [], obs)).toBe('answer-lost');
    // The pusher retried the push after the provider had accepted it: it never saw that 200.
    expect(duplicateCause(sent(5_000, 5_400), 'fcm', [5_100], obs)).toBe('answer-lost');
    expect(duplicateCause(sent(5_000, 5_400), 'fcm', [4_900], obs)).toBeUndefined(); // a retry before the first 200 explains nothing
    const deliveries = new Map([...delivered(), [pushKey('j1', 'ok-apns'), sent(9_000, 14_000)]]);
    const r = reconcile(expectedPushes(jobs, devices), observations({ deliveries, parked: new Map([[pushKey('j1', 'flaky'), 1]]), pusherKills: kills }));
    expect(r.duplicates).toEqual([{ key: 'j1|ok-apns', times: [9_000, 14_000], cause: 'pusher-killed' }]);
  });
});
