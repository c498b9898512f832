import { describe, expect, it } from 'vitest';
import { PushJob, derivePushId, type PushJobInput } from '@herald/contracts';
import type { AudienceDevice } from '@herald/db';
import { buildApnsNotification } from '@herald/providers';
import { planJob, type JobPlan } from './job-plan.ts';

const now = new Date('2030-01-01T08:00:00Z');
const job = (extra: Partial<PushJobInput> = {}) =>
  PushJob.parse({
    id: 'job-1',
    app: 'demo',
    userIds: ['ann', 'bob', 'cy', 'dee'],
    category: 'news',
    objectId: 'thread:1',
    content: { title: 'hi' },
    ...extra,
  });
const device = (
  deviceId: string,
  userId: string,
  skipped: AudienceDevice['skipped'] = null,
  extra: Partial<AudienceDevice> = {},
): AudienceDevice => ({
  deviceId,
  userId,
  app: 'demo',
  platform: 'fcm',
  token: `t-${deviceId}`,
  tokenKind: 'device',
  timezone: 'UTC',
  locale: null,
  skipped,
  ...extra,
});

/** Everything the plan accounts for: what it sends or stores, what it decided, users without a device. */
const accounted = (p: JobPlan) => p.split.now.length + p.split.later.length + p.outcomes.length + p.noDevice;

describe('planJob', () => {
  // ann: two devices; bob: opted out (two devices); cy: muted; dee: only a VoIP token, which an alert cannot reach.
  const audience = [
    device('1', 'ann'),
    device('2', 'ann'),
    device('3', 'bob', 'opted-out'),
    device('4', 'bob', 'opted-out'),
    device('5', 'cy', 'muted'),
    device('6', 'dee', null, { platform: 'apns', tokenKind: 'voip' }),
  ];

  it('counts every device push it addresses once: sent, skipped with its reason, and one per user without a device', () => {
    const plan = planJob(job(), now, audience, false, now, 1000);
    expect(plan.split.now.map((p) => p.deviceId)).toEqual(['1', '2']);
    expect(plan.outcomes).toEqual([
      expect.objectContaining({
        pushId: derivePushId('job-1', '3'),
        outcome: 'opted-out',
        reason: 'the user opted out of category "news"',
        deviceId: '3',
        platform: 'fcm',
      }),
      expect.objectContaining({ pushId: derivePushId('job-1', '4'), outcome: 'opted-out' }),
      expect.objectContaining({ pushId: derivePushId('job-1', '5'), outcome: 'muted', reason: 'the user muted "thread:1"' }),
    ]);
    expect(plan.noDevice).toBe(1);
    expect(plan).toMatchObject({ targeted: 6, label: 'fanned-out' });
    expect(accounted(plan)).toBe(plan.targeted);
  });

  it('says "skipped", not "no-devices", when every device was skipped for preferences', () => {
    const plan = planJob(
      job({ userIds: ['bob'] }),
      now,
      audience.filter((d) => d.userId === 'bob'),
      false,
      now,
      1000,
    );
    expect(plan).toMatchObject({ targeted: 2, noDevice: 0, label: 'skipped' });
    expect(planJob(job({ userIds: ['zed'] }), now, [], false, now, 1000)).toMatchObject({
      targeted: 1,
      noDevice: 1,
      label: 'no-devices',
    });
  });

  it('records each push of a job that expired before fan-out as expired, and sends nothing', () => {
    const plan = planJob(job(), now, audience, true, now, 1000);
    expect(plan.split.now).toEqual([]);
    expect(plan.outcomes.filter((o) => o.outcome === 'expired').map((o) => o.deviceId)).toEqual(['1', '2']);
    expect(plan).toMatchObject({ targeted: 6, label: 'expired' });
    expect(accounted(plan)).toBe(plan.targeted);
  });

  it('splits a scheduled job, and records pushes that would expire before they are due', () => {
    const due = { at: '2030-01-01T10:00:00Z' };
    const later = planJob(job({ deliverAt: due }), now, audience, false, now, 1000);
    // bob's and cy's too: their opt-out and mute are asked again when the pushes fall due.
    expect(later.split.later.map((l) => l.push.deviceId)).toEqual(['1', '2', '3', '4', '5']);
    expect(later.outcomes).toEqual([]);
    expect(accounted(later)).toBe(later.targeted);
    const expiring = planJob(job({ deliverAt: due, expiresAt: '2030-01-01T09:00:00Z' }), now, audience, false, now, 1000);
    expect(expiring.split.later).toEqual([]);
    expect(expiring.outcomes.filter((o) => o.outcome === 'expired')).toHaveLength(2);
    expect(expiring).toMatchObject({ label: 'expired' });
    expect(accounted(expiring)).toBe(expiring.targeted);
  });

  it('schedules every device of a jitter window that runs past the expiry before it, and drops those whose local time is after it', () => {
    // 09:00 in Berlin is 07:00Z; an hour's window would run past the expiry at 07:30Z.
    const berlin = Array.from({ length: 200 }, (_, i) => device(`b${i}`, 'ann', null, { timezone: 'Europe/Berlin' }));
    const deliverAt = { localTime: '09:00', date: '2030-06-01', jitter: 'PT1H' } as const;
    const plan = planJob(job({ userIds: ['ann'], deliverAt, expiresAt: '2030-06-01T07:30:00Z' }), now, berlin, false, now, 1000);
    expect(plan.split.expired).toEqual([]);
    expect(plan.split.later).toHaveLength(200);
    for (const { dueAt } of plan.split.later) expect(dueAt.getTime()).toBeLessThan(Date.parse('2030-06-01T07:30:00Z'));
    expect(plan).toMatchObject({ label: 'fanned-out', outcomes: [] });
    // In New York 09:00 is 13:00Z, after the expiry: the whole window is, and each push is dropped as expired.
    const newYork = berlin.map((d) => ({ ...d, timezone: 'America/New_York' }));
    const late = planJob(job({ userIds: ['ann'], deliverAt, expiresAt: '2030-06-01T07:30:00Z' }), now, newYork, false, now, 1000);
    expect(late.split.later).toEqual([]);
    expect(late.outcomes.filter((o) => o.outcome === 'expired')).toHaveLength(200);
    expect(late).toMatchObject({ label: 'expired' });
  });

  it("gives each push of a job with deliverAt.expiresAfter its own expiry that long after its due time, and drops one already past it (a backlog)", () => {
    // 09:00 local on 1 June with expiresAfter PT2H: Berlin's push (due 07:00Z) expires at 09:00Z, New York's (due 13:00Z) at 15:00Z.
    const deliverAt = { localTime: '09:00', date: '2030-06-01', expiresAfter: 'PT2H' } as const;
    const devices = [device('b', 'ann', null, { timezone: 'Europe/Berlin' }), device('n', 'bob', null, { timezone: 'America/New_York' })];
    const ahead = planJob(job({ userIds: ['ann', 'bob'], deliverAt }), now, devices, false, now, 1000);
    expect(ahead.split.later.map((l) => [l.push.deviceId, l.dueAt.toISOString(), l.push.expiresAt])).toEqual([
      ['b', '2030-06-01T07:00:00.000Z', '2030-06-01T09:00:00.000Z'],
      ['n', '2030-06-01T13:00:00.000Z', '2030-06-01T15:00:00.000Z'],
    ]);
    // The job's own expiry, when earlier, stands.
    const capped = planJob(job({ userIds: ['ann', 'bob'], deliverAt, expiresAt: '2030-06-01T14:00:00Z' }), now, devices, false, now, 1000);
    expect(capped.split.later.map((l) => l.push.expiresAt)).toEqual(['2030-06-01T09:00:00.000Z', '2030-06-01T14:00:00.000Z']);
    // Demuxed at 10:00Z, after a backlog: Berlin's push went stale at 09:00Z and is dropped as expired; New York's is stored.
    const late = planJob(job({ userIds: ['ann', 'bob'], deliverAt }), now, devices, false, new Date('2030-06-01T10:00:00Z'), 1000);
    expect(late.split.later.map((l) => l.push.deviceId)).toEqual(['n']);
    expect(late.outcomes).toEqual([expect.objectContaining({ outcome: 'expired', deviceId: 'b' })]);
    expect(accounted(late)).toBe(late.targeted);
  });

  it('skips, as an unscheduled job does, the devices of users who opted out or muted when their push is due now', () => {
    const dueNow = planJob(job({ deliverAt: { at: '2030-01-01T07:59:00Z' } }), now, audience, false, now, 1000);
    expect(dueNow.split.now.map((p) => p.deviceId)).toEqual(['1', '2']);
    expect(dueNow.split.later).toEqual([]);
    expect(dueNow.outcomes.map((o) => [o.deviceId, o.outcome])).toEqual([['3', 'opted-out'], ['4', 'opted-out'], ['5', 'muted']]);
    expect(accounted(dueNow)).toBe(dueNow.targeted);
    // Everyone skipped and due now: the job says so.
    const bobs = audience.filter((d) => d.userId === 'bob');
    expect(planJob(job({ userIds: ['bob'], deliverAt: { at: '2030-01-01T07:59:00Z' } }), now, bobs, false, now, 1000)).toMatchObject({ label: 'skipped' });
    // Everyone skipped now but due tomorrow: stored, to be asked again then.
    const tomorrow = planJob(job({ userIds: ['bob'], deliverAt: { at: '2030-01-02T08:00:00Z' } }), now, bobs, false, now, 1000);
    expect(tomorrow).toMatchObject({ label: 'fanned-out', outcomes: [] });
    expect(tomorrow.split.later.map((l) => l.push.deviceId)).toEqual(['3', '4']);
  });

  it("reads a local time without a date from when the job was accepted: a backlog past it sends today, not tomorrow", () => {
    // Accepted at 07:58 for 08:00 (UTC devices), taken by the demuxer at 08:01. ann's devices only.
    const audience = [device('1', 'ann'), device('2', 'ann')];
    const accepted = new Date('2030-01-01T07:58:00Z');
    const late = new Date('2030-01-01T08:01:00Z');
    const onTime = planJob(job({ deliverAt: { localTime: '08:00' } }), accepted, audience, false, late, 1000);
    expect(onTime.split.now.map((p) => p.deviceId)).toEqual(['1', '2']);
    expect(onTime.split.later).toEqual([]);
    // Spread over an hour: each device at its own instant of today's window, at once where that has passed.
    const spread = planJob(job({ deliverAt: { localTime: '08:00', jitter: 'PT1H' } }), accepted, audience, false, late, 1000);
    const dues = [...spread.split.now.map(() => late.getTime()), ...spread.split.later.map((l) => l.dueAt.getTime())];
    expect(dues).toHaveLength(2);
    for (const at of dues) expect(at).toBeLessThan(Date.parse('2030-01-01T09:00:00Z'));
    // The same job accepted after 08:00 is tomorrow's.
    const nextDay = planJob(job({ deliverAt: { localTime: '08:00' } }), late, audience, false, late, 1000);
    expect(nextDay.split.later.map((l) => l.dueAt.toISOString())).toEqual(['2030-01-02T08:00:00.000Z', '2030-01-02T08:00:00.000Z']);
  });

  it('stamps a push scheduled after acceptance with its due time: a scheduled Live Activity update goes with it as its timestamp, not the acceptance hours before', () => {
    // Accepted at 08:00 for 23:00Z: any update sent between would otherwise make iOS drop this one as older.
    const activity = [device('la', 'ann', null, { platform: 'apns', tokenKind: 'liveactivity' })];
    const content = { liveActivity: { event: 'end' as const, contentState: { score: '2-1' } } };
    const plan = planJob(job({ userIds: ['ann'], content, deliverAt: { at: '2030-01-01T23:00:00Z' } }), now, activity, false, now, 1000);
    const stored = plan.split.later[0]?.push;
    expect(stored?.dueAt).toBe('2030-01-01T23:00:00.000Z');
    const sent = buildApnsNotification(stored as NonNullable<typeof stored>, 'com.example', new Date('2030-01-01T23:00:01Z'));
    expect((sent.payload as { aps: { timestamp: number } }).aps.timestamp).toBe(Date.parse('2030-01-01T23:00:00Z') / 1000);
    // Due before it was accepted (a backlog), or not scheduled: nothing to stamp, the acceptance stands.
    const unscheduled = planJob(job({ userIds: ['ann'], content }), now, activity, false, now, 1000);
    expect(unscheduled.split.now[0]?.dueAt).toBeUndefined();
  });

  it('a VoIP push chosen through the apns-push-type header reaches only VoIP tokens and goes out now or never, as with pushType', () => {
    // dee's VoIP token and ann's device token: only the VoIP token rings, and Apple must not store the call (apns-expiration 0).
    const call = { data: { call: 'x' }, apns: { headers: { 'apns-push-type': 'voip' as const } } };
    for (const content of [call, { pushType: 'voip' as const, data: { call: 'x' } }]) {
      const plan = planJob(job({ userIds: ['ann', 'dee'], content }), now, audience, false, now, 1000);
      expect(plan.split.now.map((p) => p.deviceId)).toEqual(['6']);
      const [push] = plan.split.now;
      expect(push).toMatchObject({ nowOrNever: true, expiresAt: '2030-01-01T08:01:00.000Z' });
      const { headers } = buildApnsNotification(push as NonNullable<typeof push>, 'com.example', now);
      expect(headers).toMatchObject({ 'apns-push-type': 'voip', 'apns-topic': 'com.example.voip', 'apns-expiration': '0' });
    }
  });

  it('a background job reaches no browser unless it carries content.web; a user with only a browser counts as without a device', () => {
    // ann: a phone and a browser; eve: only a browser.
    const mixed = [device('1', 'ann'), device('7', 'ann', null, { platform: 'web' }), device('8', 'eve', null, { platform: 'web' })];
    const background = planJob(job({ userIds: ['ann', 'eve'], content: { data: { sync: '1' } } }), now, mixed, false, now, 1000);
    expect(background.split.now.map((p) => p.deviceId)).toEqual(['1']);
    expect(background).toMatchObject({ noDevice: 1, targeted: 2, label: 'fanned-out' });
    expect(accounted(background)).toBe(background.targeted);
    const eveOnly = planJob(job({ userIds: ['eve'], content: { data: { sync: '1' } } }), now, mixed.filter((d) => d.userId === 'eve'), false, now, 1000);
    expect(eveOnly).toMatchObject({ noDevice: 1, targeted: 1, label: 'no-devices' });
    // Opted in: the browsers get it (their service worker must show a notification).
    const optedIn = planJob(job({ userIds: ['ann', 'eve'], content: { data: { sync: '1' }, web: {} } }), now, mixed, false, now, 1000);
    expect(optedIn.split.now.map((p) => p.deviceId)).toEqual(['1', '7', '8']);
    expect(optedIn).toMatchObject({ noDevice: 0, targeted: 3 });
    // Something to show goes to browsers as before.
    expect(planJob(job({ userIds: ['eve'] }), now, mixed.filter((d) => d.userId === 'eve'), false, now, 1000).split.now.map((p) => p.deviceId)).toEqual(['8']);
  });
  // A retry of a fan-out that recorded the job and published nothing: devices dead since it counted them come back `gone`.
  it('counts a device dead since an earlier pass counted it as addressed, sends it nothing and records its push dead; a job left with nothing to send is still the fan-out it was', () => {
    const gone = (id: string, user: string, skipped: AudienceDevice['skipped'] = null) => device(id, user, skipped, { gone: true });
    const plan = planJob(job(), now, [device('1', 'ann'), gone('2', 'ann'), gone('3', 'bob', 'opted-out'), gone('5', 'cy')], false, now, 1000);
    expect(plan.split.now.map((p) => p.deviceId)).toEqual(['1']);
    expect(plan.outcomes).toEqual([]);
    expect(plan.dead.map((o) => [o.deviceId, o.outcome, o.code, o.pushId])).toEqual(
      ['2', '3', '5'].map((id) => [id, 'invalid', 'invalidated', derivePushId('job-1', id)]),
    );
    // bob and cy count as reached (their devices were addressed), dee as without a device.
    expect([plan.targeted, accounted(plan) + plan.dead.length, plan.noDevice, plan.label]).toEqual([5, 5, 1, 'fanned-out']);
    const allGone = planJob(job({ userIds: ['ann'] }), now, [gone('1', 'ann'), gone('2', 'ann')], false, now, 1000);
    expect([allGone.split.now.length, allGone.dead.length, allGone.targeted, allGone.label]).toEqual([0, 2, 2, 'fanned-out']);
    // The one left alive skipped: still the fan-out the earlier pass recorded, not "skipped".
    expect(planJob(job({ userIds: ['bob'] }), now, [device('3', 'bob', 'opted-out'), gone('4', 'bob')], false, now, 1000).label).toBe('fanned-out');
  });

  it('stores nothing for a scheduled job\'s device dead since an earlier pass: its push is recorded dead', () => {
    const plan = planJob(job({ deliverAt: { at: '2030-01-02T09:00:00Z' } }), now, [device('1', 'ann'), device('2', 'ann', null, { gone: true })], false, now, 1000);
    expect(plan.split.later.map((l) => l.push.deviceId)).toEqual(['1']);
    expect(plan.dead.map((o) => o.deviceId)).toEqual(['2']);
    expect(accounted(plan) + plan.dead.length).toBe(plan.targeted);
  });
});
