import { describe, expect, it } from 'vitest';
import { decodeWith, parseWith } from './parse.ts';
import { expiryAfterDue } from './deliver-at.ts';
import { DevicePush, derivePushId } from './device-push.ts';
import { CLOCK_SKEW_ALLOWANCE_MS, JOB_DIGEST_VERSION, PushJob, acceptedAtOf, expiredWhenAccepted, expiresBeforeDue, isNowOrNever, jobContentHash, jobExpiry, newJobIssues } from './push-job.ts';

const input = { id: 'order-1234-shipped', app: 'shop', category: 'orders', content: { title: 'Shipped', body: 'Your order is on its way' }, userId: 'u-42' };
const parsed = (value: unknown): PushJob => {
  const r = parseWith(PushJob, value);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('a job’s digest (the HTTP API and the demuxer tell two jobs under one id apart by it)', () => {
  it('is SHA-256 of the job as validated (version 0); pinned: a change to what it reads must raise JOB_DIGEST_VERSION, or every job in flight across the upgrade is parked job-id-reused', () => {
    const digest = jobContentHash(parsed(input));
    expect(JOB_DIGEST_VERSION).toBe(0);
    expect(digest.toString('hex')).toBe('ebf7fd8dfec3660fe9800fe63d6310fbbc56bbbf0f991a19fde90fddb2bf1be5');
  });

  it('is the same for the job the API validated and stamped and for that job as the demuxer decodes it from the queue; acceptedAt and trace aside, and in any key order', () => {
    const stamped = parsed({ ...input, acceptedAt: '2026-12-06T10:00:00.000Z' });
    const decoded = decodeWith(PushJob, Buffer.from(JSON.stringify(stamped)));
    if (!decoded.ok) throw new Error(decoded.reason);
    expect(jobContentHash(decoded.value)).toEqual(jobContentHash(stamped));
    const reordered = parsed({ trace: true, userId: 'u-42', content: { body: 'Your order is on its way', title: 'Shipped' }, category: 'orders', app: 'shop', id: 'order-1234-shipped' });
    expect(jobContentHash(reordered)).toEqual(jobContentHash(stamped));
    expect(jobContentHash(parsed({ ...input, content: { title: 'Shipped!' } }))).not.toEqual(jobContentHash(stamped));
  });

  it('of a later version is 33 bytes, the version first (the doors take digests of two versions as unknown)', () => {
    const job = parsed(input);
    const later = jobContentHash(job, 1);
    expect(later.length).toBe(33);
    expect(later[0]).toBe(1);
    expect(later.subarray(1)).toEqual(jobContentHash(job, 0));
  });
});

describe('decoding a message body', () => {
  it('refuses bytes that are not UTF-8 as malformed JSON: a Latin-1 "é" would be U+FFFD, and "cafè" and "café" one user', () => {
    const latin1 = (userId: string) => Buffer.from(JSON.stringify({ ...input, userId }), 'latin1');
    expect(decodeWith(PushJob, latin1('caf\u00e9'))).toEqual({ ok: false, reason: 'malformed JSON: the body is not valid UTF-8' });
    expect(decodeWith(PushJob, latin1('caf\u00e8'))).toEqual({ ok: false, reason: 'malformed JSON: the body is not valid UTF-8' });
    const utf8 = decodeWith(PushJob, Buffer.from(JSON.stringify({ ...input, userId: 'caf\u00e9' }), 'utf8'));
    expect(utf8.ok && utf8.value.userId).toBe('caf\u00e9');
  });
});

describe("a new job's content (rules its doors hold it to, not the jobs and pushes accepted before them)", () => {
  const devicePush = (content: object) => ({
    version: 1, pushId: derivePushId('j', '1'), jobId: 'j', deviceId: '1', app: 'shop', platform: 'fcm', token: `fcm:${'A'.repeat(140)}`,
    userId: 'u', content, priority: 'high', acceptedAt: '2026-12-06T10:00:00.000Z',
  });
  /** What a door says of a new job of this content; a job accepted before (queued, parked, fanning out) still decodes. */
  const refusal = (content: object): string => {
    const job = parsed({ ...input, content });
    expect(decodeWith(PushJob, Buffer.from(JSON.stringify(job))).ok).toBe(true);
    expect(DevicePush.safeParse(devicePush(content)).success).toBe(true);
    return newJobIssues(job).map((i) => `${i.path}: ${i.message}`).join('; ') || 'accepted';
  };

  it('refuses a data key collapse_key, which the Firebase Android SDK leaves out of what the app receives', () => {
    expect(refusal({ title: 'Hi', data: { collapse_key: 'x', order: '7' } })).toMatch(/^content\.data\.collapse_key: is reserved: the Firebase Android SDK leaves it out/);
    expect(refusal({ title: 'Hi', data: { collapse: 'x' } })).toBe('accepted');
  });

  it("refuses a data key image-url beside imageUrl (the iPhone's payload carries the image under it); alone it is the job's own", () => {
    expect(refusal({ title: 'Hi', imageUrl: 'https://cdn.example/a.png', data: { 'image-url': 'mine' } })).toMatch(/^content\.data\.image-url: clashes with imageUrl/);
    expect(refusal({ title: 'Hi', data: { 'image-url': 'mine' } })).toBe('accepted');
  });

  it('refuses an imageUrl no phone or browser downloads (javascript:, data:, file:), takes https and http', () => {
    for (const url of ['javascript:alert(1)', 'data:image/png;base64,AAAA', 'file:///etc/passwd', 'ftp://cdn.example/a.png']) {
      expect(refusal({ title: 'Hi', imageUrl: url })).toMatch(/^content\.imageUrl: must be an https \(or http\) URL/);
    }
    expect(refusal({ title: 'Hi', imageUrl: 'https://cdn.example/a.png' })).toBe('accepted');
    expect(refusal({ title: 'Hi', imageUrl: 'HTTP://cdn.example/a.png' })).toBe('accepted');
  });
});

describe("a VoIP job's expiry", () => {
  const accepted = new Date('2026-12-06T10:00:00Z');
  const voip = (deliverAt?: object) => parsed({ ...input, content: { pushType: 'voip', data: { call: '7' } }, ...(deliverAt !== undefined && { deliverAt }) });
  /** The expiry a push of the job due at `dueAt` carries (as the demuxer sets it), or undefined. */
  const pushExpiry = (job: PushJob, dueAt: Date) => (job.deliverAt === undefined ? jobExpiry(job, accepted) : expiryAfterDue(job.deliverAt, dueAt, jobExpiry(job, accepted)));

  it('is deliverAt.expiresAfter after each push is due when given: an expiry of its own, not now-or-never (refused for an hour ahead, expired for a local time)', () => {
    const inAnHour = new Date(accepted.getTime() + 3_600_000);
    const atInstant = voip({ at: inAnHour.toISOString(), expiresAfter: 'PT10M' });
    expect(expiresBeforeDue(atInstant, accepted)).toBeUndefined();
    expect(isNowOrNever(atInstant)).toBe(false);
    expect(pushExpiry(atInstant, inAnHour)).toEqual(new Date('2026-12-06T11:10:00Z'));

    const atLocalTime = voip({ localTime: '09:00', expiresAfter: 'PT10M' });
    const dueInParis = new Date('2026-12-07T08:00:00Z');
    expect(isNowOrNever(atLocalTime)).toBe(false);
    expect(pushExpiry(atLocalTime, dueInParis)).toEqual(new Date('2026-12-07T08:10:00Z'));
  });

  it('scheduled an hour ahead without any expiry of its own is refused naming deliverAt.expiresAfter, why and what to give: it has no ttl to lengthen', () => {
    const inAnHour = voip({ at: new Date(accepted.getTime() + 3_600_000).toISOString() });
    expect(expiresBeforeDue(inAnHour, accepted)).toEqual({
      path: 'deliverAt.expiresAfter',
      message:
        'the job expires at 2026-12-06T10:01:00.000Z, before it is due (2026-12-06T11:00:00.000Z), so nothing would be delivered: a VoIP push without an expiry of its own is now-or-never (sent within 60 s of acceptance or not at all, as a call that rings hours later is worse than none), so give deliverAt.expiresAfter, how long after it is due it may still ring (e.g. "PT5M")',
    });
    // One given ttl: 0 asked for now-or-never itself, and is told of its ttl.
    expect(expiresBeforeDue(parsed({ ...inAnHour, ttl: 0 }), accepted)).toMatchObject({ path: 'ttl' });
  });

  it('without any expiry of its own is now-or-never: sent within 60 s of acceptance, not stored by the providers', () => {
    for (const job of [voip(), voip({ at: accepted.toISOString() })]) {
      expect(isNowOrNever(job)).toBe(true);
      expect(pushExpiry(job, accepted)).toEqual(new Date('2026-12-06T10:01:00Z'));
    }
  });
});

describe('a job that had expired when it was accepted (an expiresAt in the past: a wrong year or UTC offset)', () => {
  const accepted = new Date('2026-12-06T10:00:00Z');
  const expiring = (expiresAt: string, over: object = {}) => parsed({ ...input, expiresAt, ...over });

  it('is refused naming expiresAt, scheduled or not: every push would be dropped as expired', () => {
    expect(expiredWhenAccepted(expiring('2025-12-06T09:00:00Z'), accepted)).toEqual({
      path: 'expiresAt',
      message:
        'the job had expired when it was accepted (expires 2025-12-06T09:00:00.000Z, accepted 2026-12-06T10:00:00.000Z: 5 minutes or more before, further than clocks apart explain), so nothing would be delivered: check its date and UTC offset',
    });
    // A wrong UTC offset (an hour), and an expiry CLOCK_SKEW_ALLOWANCE_MS before acceptance: no clock that far ahead is taken at its word.
    expect(expiredWhenAccepted(expiring('2026-12-06T10:00:00+01:00'), accepted)).toMatchObject({ path: 'expiresAt' });
    expect(expiredWhenAccepted(expiring(new Date(accepted.getTime() - CLOCK_SKEW_ALLOWANCE_MS).toISOString()), accepted)).toMatchObject({ path: 'expiresAt' });
    // Due an hour ago (due at once), expiring half an hour ago: its due time's start is before the expiry, yet nothing goes.
    expect(expiredWhenAccepted(expiring('2026-12-06T09:30:00Z', { deliverAt: { at: '2026-12-06T09:00:00Z' } }), accepted)).toMatchObject({ path: 'expiresAt' });
  });

  it('is not a job expiring after its acceptance, nor one whose expiry counts from it (a ttl, now-or-never)', () => {
    expect(expiredWhenAccepted(expiring('2026-12-06T10:00:00.001Z'), accepted)).toBeUndefined();
    expect(expiredWhenAccepted(expiring('2026-12-06T10:30:00Z', { deliverAt: { at: '2026-12-06T09:00:00Z' } }), accepted)).toBeUndefined();
    expect(expiredWhenAccepted(parsed({ ...input, ttl: 0 }), accepted)).toBeUndefined();
    expect(expiredWhenAccepted(parsed(input), accepted)).toBeUndefined();
  });

  // Before, a producer's clock two minutes fast refused an absolute deadline another host set a minute ahead, which the demuxer (acceptedAtOf: never later than its now) delivers.
  it('is not a job whose expiresAt passed on a door clock running ahead of the demuxer\'s by less than CLOCK_SKEW_ALLOWANCE_MS (5 minutes)', () => {
    expect(CLOCK_SKEW_ALLOWANCE_MS).toBe(300_000);
    const trueNow = accepted.getTime();
    const deadline = expiring(new Date(trueNow + 60_000).toISOString());
    const fastClock = new Date(trueNow + 120_000);
    expect(expiredWhenAccepted(deadline, acceptedAtOf({ acceptedAt: fastClock.toISOString() }, fastClock))).toBeUndefined();
    // The demuxer, its clock right, takes it as accepted at its own now, before the expiry.
    expect(jobExpiry(deadline, acceptedAtOf({ acceptedAt: fastClock.toISOString() }, accepted))?.getTime()).toBeGreaterThan(trueNow);
    // An expiry at the very instant of acceptance, or a minute before it, is within the allowance too.
    expect(expiredWhenAccepted(expiring('2026-12-06T10:00:00Z'), accepted)).toBeUndefined();
    expect(expiredWhenAccepted(expiring(new Date(accepted.getTime() - CLOCK_SKEW_ALLOWANCE_MS + 1).toISOString()), accepted)).toBeUndefined();
  });
});
