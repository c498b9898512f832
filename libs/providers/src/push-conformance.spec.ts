import { PushJob, type PushJobInput } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { buildFcmMessage } from './fcm-message.ts';
import { entryConformanceIssues, jobConformanceIssues, jobNotices, platformsFor, webConformanceIssues } from './push-conformance.ts';
import { testPush } from './test-pushes.ts';

const job = (over: Partial<PushJobInput>): PushJob => PushJob.parse({ id: 'j1', app: 'demo', userId: 'u', category: 'c', content: { title: 'Hi' }, ...over });
const NOW = new Date('2026-01-01T00:00:00Z');
/** The door of an app with VAPID keys: Web Push's rules too. */
const WEB = { web: true };
/** The FCM push a job's content and priority make (the apns block FCM forwards to iOS). */
const pushOf = (j: PushJob) => testPush('fcm', { content: j.content, priority: j.priority });

describe('jobConformanceIssues: the providers\' rules at the door', () => {
  it('accepts an ordinary job', () => {
    expect(jobConformanceIssues(job({}), WEB, NOW)).toEqual([]);
  });

  it('a 5 KB payload is refused with its computed size for each platform', () => {
    const issues = jobConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(5000) } } }), WEB, NOW);
    expect(issues).toEqual([
      { path: 'content', message: expect.stringMatching(/^APNs: payload too large: APNs alert payload is 50\d\d bytes, the limit is 4096$/) as unknown },
      { path: 'content', message: expect.stringMatching(/^FCM: payload too large: .* is 50\d\d bytes, the limit is 4096$/) as unknown },
      { path: 'content', message: expect.stringMatching(/^Web Push: payload is 5\d\d\d bytes; Web Push allows 3993 bytes of JSON/) as unknown },
    ]);
  });

  it('Web Push: JSON over 3,993 bytes is refused even when APNs and FCM would take it (4,096 once encrypted)', () => {
    const issues = jobConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(3900) } } }), WEB, NOW);
    expect(issues).toEqual([{ path: 'content', message: expect.stringMatching(/^Web Push: payload is 40\d\d bytes; Web Push allows 3993 bytes/) as unknown }]);
    const viaOverride = jobConformanceIssues(job({ content: { title: 'Hi', web: { payload: { blob: 'x'.repeat(4000) } } } }), WEB, NOW);
    expect(viaOverride).toEqual([{ path: 'content.web.payload', message: expect.stringMatching(/^Web Push: payload is/) as unknown }]);
  });

  it('an app without VAPID keys is not held to the Web Push limit: the same job passes, a 5 KB one still fails for APNs and FCM', () => {
    expect(jobConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(3900) } } }), { web: false }, NOW)).toEqual([]);
    expect(jobConformanceIssues(job({ content: { title: 'Hi', web: { payload: { blob: 'x'.repeat(4000) } } } }), { web: false }, NOW)).toEqual([]);
    const big = jobConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(5000) } } }), { web: false }, NOW);
    expect(big.map((i) => i.message.split(':')[0])).toEqual(['APNs', 'FCM']);
  });

  it('webConformanceIssues: Web Push\'s rules alone, for a door that learns later that the job has browsers', () => {
    expect(webConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(3900) } } }), NOW)).toEqual([
      { path: 'content', message: expect.stringMatching(/^Web Push: payload is 40\d\d bytes/) as unknown },
    ]);
    // A 5 KB job: only the Web Push issue (APNs' and FCM's are the admission check's); none for a job that goes to no browser.
    expect(webConformanceIssues(job({ content: { title: 'Hi', data: { blob: 'x'.repeat(5000) } } }), NOW).map((i) => i.message.split(':')[0])).toEqual(['Web Push']);
    expect(webConformanceIssues(job({ content: { data: { blob: 'x'.repeat(3900) } } }), NOW)).toEqual([]);
  });

  it('Web Push: a collapse key of any form is accepted (it becomes a 32-character topic); content.web.topic must meet RFC 8030', () => {
    expect(jobConformanceIssues(job({ collapseKey: 'a key with spaces that is longer than 32 chars' }), WEB, NOW)).toEqual([]);
    expect(PushJob.safeParse({ id: 'j1', app: 'demo', userId: 'u', category: 'c', content: { title: 'Hi', web: { topic: 'not a topic!' } } }).error?.issues[0]?.path).toEqual(['content', 'web', 'topic']);
    expect(PushJob.safeParse({ id: 'j1', app: 'demo', userId: 'u', category: 'c', content: { title: 'Hi', web: { urgency: 'urgent' } } }).success).toBe(false);
  });

  it('a VoIP push may use 5,120 bytes and is checked against APNs only', () => {
    const voip = job({ content: { pushType: 'voip', data: { blob: 'x'.repeat(4500) } } });
    expect(platformsFor(voip.content)).toEqual(['apns']);
    expect(jobConformanceIssues(voip, WEB, NOW)).toEqual([]);
  });

  it('a VoIP push chosen through the apns-push-type header may use 5,120 bytes and reaches APNs only, as with pushType', () => {
    const voip = job({ content: { data: { blob: 'x'.repeat(4500) }, apns: { headers: { 'apns-push-type': 'voip' } } } });
    expect(platformsFor(voip.content)).toEqual(['apns']);
    expect(jobConformanceIssues(voip, WEB, NOW)).toEqual([]);
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content: voip.content }, NOW)).toEqual([]);
  });

  it('a background (data-only) job reaches browsers only when it carries content.web (Safari revokes the permission of a site whose pushes show nothing)', () => {
    expect(platformsFor({ data: { k: 'v' } })).toEqual(['apns', 'fcm']);
    expect(platformsFor({ contentAvailable: true })).toEqual(['apns', 'fcm']);
    expect(platformsFor({ data: { k: 'v' }, web: {} })).toEqual(['apns', 'fcm', 'web']);
    expect(platformsFor({ title: 'Hi' })).toEqual(['apns', 'fcm', 'web']);
    // Not held to Web Push's smaller limit either, as it never goes to a browser; with content.web it is.
    const data = { blob: 'x'.repeat(3900) };
    expect(jobConformanceIssues(job({ content: { data } }), WEB, NOW)).toEqual([]);
    expect(jobConformanceIssues(job({ content: { data, web: { urgency: 'low' } } }), WEB, NOW).map((i) => i.message.split(':')[0])).toEqual(['Web Push']);
  });

  it('an alert of only a badge or a sound is no notification a browser can show: it reaches browsers only with content.web, as a background job', () => {
    expect(platformsFor({ badge: 3 })).toEqual(['apns', 'fcm']);
    expect(platformsFor({ sound: 'default' })).toEqual(['apns', 'fcm']);
    expect(platformsFor({ badge: 3, web: {} })).toEqual(['apns', 'fcm', 'web']);
    expect(platformsFor({ subtitle: 'Hi' })).toEqual(['apns', 'fcm', 'web']);
    expect(platformsFor({ locKey: 'GREETING' })).toEqual(['apns', 'fcm', 'web']);
  });

  // Accepted before the header chose the push type everywhere: FCM's parts follow the typed content, the header being APNs' own.
  it('a data job whose APNs alert is given in content.apns (header alert, raw aps) passes every provider\'s rules, FCM sending it as data', () => {
    const content = { data: { k: 'v' }, apns: { headers: { 'apns-push-type': 'alert' as const }, payload: { aps: { alert: { title: 'Hi' } } } } };
    expect(jobConformanceIssues(job({ content }), WEB, NOW)).toEqual([]);
    expect(platformsFor(content)).toEqual(['apns', 'fcm']);
  });

  it('a data job at high priority whose APNs alert is only in content.apns\'s raw aps reaches iOS through FCM as data at priority 5 (Google: data messages to Apple devices "must be set to 5"), passing every door', () => {
    const content = { pushType: 'alert' as const, data: { k: 'v' }, apns: { payload: { aps: { alert: 'hi' } } } };
    expect(jobConformanceIssues(job({ priority: 'high', content }), WEB, NOW)).toEqual([]);
    expect(buildFcmMessage(pushOf(job({ priority: 'high', content }))).apns.headers['apns-priority']).toBe('5');
    // The same alert given to FCM too (content.fcm.apns's raw aps) shows on iOS: the job's high priority holds.
    const both = { ...content, fcm: { apns: { payload: { aps: { alert: 'hi' } } } } };
    expect(jobConformanceIssues(job({ priority: 'high', content: both }), WEB, NOW)).toEqual([]);
    expect(buildFcmMessage(pushOf(job({ priority: 'high', content: both }))).apns.headers['apns-priority']).toBe('10');
  });

  it('an override that breaks a header rule is refused after the merge, naming the override\'s header', () => {
    const issues = jobConformanceIssues(job({ content: { contentAvailable: true, apns: { headers: { 'apns-priority': '10' } } } }), WEB, NOW);
    expect(issues).toEqual([{ path: 'content.apns.headers.apns-priority', message: 'APNs: a background push must use apns-priority 5 (Apple: "Always use priority 5"), not 10' }]);
  });

  it('a background push at apns-priority 1 is refused on both paths (Apple: "Always use priority 5"; Google: data messages to Apple devices "must be set to 5"): 1 would not wake the app', () => {
    const direct = jobConformanceIssues(job({ content: { contentAvailable: true, apns: { headers: { 'apns-priority': '1' } } } }), WEB, NOW);
    expect(direct).toEqual([{ path: 'content.apns.headers.apns-priority', message: 'APNs: a background push must use apns-priority 5 (Apple: "Always use priority 5"), not 1' }]);
    const viaFcm = jobConformanceIssues(job({ content: { data: { k: 'v' }, fcm: { apns: { headers: { 'apns-priority': '1' } } } } }), WEB, NOW);
    expect(viaFcm).toEqual([{ path: 'content.fcm.apns.headers.apns-priority', message: 'FCM: apns: a data-only (background) push to iOS must use apns-priority 5, not 1' }]);
    // Each path's own header is named: content.apns's 5 is fine, content.fcm.apns's 10 is not.
    const both = jobConformanceIssues(job({ content: { data: { k: 'v' }, apns: { headers: { 'apns-priority': '5' } }, fcm: { apns: { headers: { 'APNs-Priority': '10' } } } } }), WEB, NOW);
    expect(both).toEqual([{ path: 'content.fcm.apns.headers.APNs-Priority', message: 'FCM: apns: a data-only (background) push to iOS must use apns-priority 5, not 10' }]);
  });

  it('an FCM override that breaks Google\'s rules names content.fcm', () => {
    const issues = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { ttl: '9999999s' } } } }), WEB, NOW);
    expect(issues).toEqual([{ path: 'content.fcm.android.ttl', message: expect.stringMatching(/^FCM: android.ttl is 9999999 s, beyond FCM's 4-week maximum/) as unknown }]);
  });

  it('an FCM webpush override Google would refuse is refused at the door, naming its field: the whole message would be parked', () => {
    const typed = jobConformanceIssues(job({ content: { title: 't', fcm: { webpush: { data: { n: 1 } } } } }), WEB, NOW);
    expect(typed).toEqual([{ path: 'content.fcm.webpush.data.n', message: 'FCM: webpush.data.n must be a string (FCM: map<string, string>)' }]);
    const unknown = jobConformanceIssues(job({ content: { title: 't', fcm: { webpush: { fcm_options: { url: 'https://x' } } } } }), WEB, NOW);
    expect(unknown).toEqual([{ path: 'content.fcm.webpush.fcm_options.url', message: expect.stringMatching(/^FCM: webpush.fcm_options.url is not a field of WebpushFcmOptions/) as unknown }]);
    const android = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { fcm_options: { link: 'https://x' } } } } }), WEB, NOW);
    expect(android).toEqual([{ path: 'content.fcm.android.fcm_options.link', message: expect.stringMatching(/not a field of AndroidFcmOptions/) as unknown }]);
    const subtitle = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { notification: { subtitle: 's' } } } } }), WEB, NOW);
    expect(subtitle).toEqual([{ path: 'content.fcm.android.notification.subtitle', message: expect.stringMatching(/not a field of AndroidNotification/) as unknown }]);
    // A collapse key problem names the override's field when the override set it, the job's collapseKey when the job did.
    const twice = jobConformanceIssues(job({ collapseKey: 'score', content: { title: 't', fcm: { android: { collapseKey: 'x' } } } }), WEB, NOW);
    expect(twice).toEqual([{ path: 'content.fcm.android.collapseKey', message: expect.stringMatching(/^FCM: android.collapseKey sets android.collapse_key a second time/) as unknown }]);
    const emoji = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { collapse_key: '🔥' } } } }), WEB, NOW);
    expect(emoji).toEqual([{ path: 'content.fcm.android.collapse_key', message: expect.stringMatching(/^FCM: android.collapse_key must be printable ASCII/) as unknown }]);
    const camel = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { collapseKey: '🔥' } } } }), WEB, NOW);
    expect(camel).toEqual([{ path: 'content.fcm.android.collapseKey', message: expect.stringMatching(/^FCM: android.collapse_key must be printable ASCII/) as unknown }]);
    const priority = jobConformanceIssues(job({ content: { title: 't', fcm: { android: { priority: 'URGENT' } } } }), WEB, NOW);
    expect(priority).toEqual([{ path: 'content.fcm.android.priority', message: 'FCM: android.priority must be NORMAL or HIGH' }]);
    const fine = { webpush: { headers: { Urgency: 'high' }, data: { n: '1' }, notification: { title: 't' }, fcm_options: { link: 'https://example.com' } } };
    expect(jobConformanceIssues(job({ content: { title: 't', fcm: fine } }), WEB, NOW)).toEqual([]);
  });

  it('a Live Activity at apns-priority 1 is refused (Apple allows 5 or 10)', () => {
    const la = { liveActivity: { event: 'update' as const, contentState: { s: 1 } }, apns: { headers: { 'apns-priority': '1' as const } } };
    expect(jobConformanceIssues(job({ content: la }), WEB, NOW)).toEqual([{ path: 'content.apns.headers.apns-priority', message: 'APNs: a Live Activity push must use apns-priority 5 or 10' }]);
  });

  it('input a serializer cannot take is a refusal, not a crash', () => {
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    const bad = { ...job({}), content: { title: 't', apns: { payload: loop } } } as unknown as PushJob;
    expect(jobConformanceIssues(bad, WEB, NOW)[0]?.message).toMatch(/^APNs: cannot be checked: /);
  });

  it('says so when the image is by plain http (iPhones and Android download it only where the app allows cleartext), not when https', () => {
    expect(jobNotices({ content: { title: 't', imageUrl: 'http://cdn.example/a.png' } }, NOW)).toEqual([expect.stringMatching(/^content\.imageUrl is http: iPhones \(App Transport Security\)/) as unknown]);
    expect(jobNotices({ content: { title: 't', imageUrl: 'https://cdn.example/a.png' } }, NOW)).toEqual([]);
  });

  it('says so when an expiry is beyond FCM\'s 28 days, only when the job can reach FCM', () => {
    const content = { title: 't' };
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content }, NOW)).toEqual([expect.stringMatching(/40 days ahead: FCM stores a push at most 28 days/) as unknown]);
    expect(jobNotices({ expiresAt: '2026-01-20T00:00:00Z', content }, NOW)).toEqual([]);
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content: { pushType: 'voip', data: { c: '1' } } }, NOW)).toEqual([]);
    // deliverAt.expiresAfter expires each push within 28 days of its due time: FCM stores it whole.
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content, deliverAt: { at: '2026-01-01T12:00:00Z', expiresAfter: 'P2D' } }, NOW)).toEqual([]);
  });

  it("counts a scheduled job's expiry from when it is due, as FCM's ttl counts from the send", () => {
    const content = { title: 't' };
    // Due 20 days on, expiring 40 days on: sent with 20 days to live, nothing capped (it said "40 days ahead").
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content, deliverAt: { at: '2026-01-21T00:00:00Z' } }, NOW)).toEqual([]);
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content, deliverAt: { localTime: '09:00', date: '2026-01-21' } }, NOW)).toEqual([]);
    // Due at once (a local time without a date) or 5 days on with 35 days more: capped, and said so from the due time.
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content, deliverAt: { localTime: '09:00' } }, NOW)).toEqual([expect.stringMatching(/40 days after the job is due/) as unknown]);
    expect(jobNotices({ expiresAt: '2026-02-10T00:00:00Z', content, deliverAt: { at: '2026-01-06T00:00:00Z' } }, NOW)).toEqual([expect.stringMatching(/35 days after the job is due/) as unknown]);
  });

  it('says so when a local time without a date expires within a day of acceptance: the devices whose local time comes later get nothing', () => {
    const content = { title: 't' };
    const local = { localTime: '09:00', jitter: 'PT30M' };
    expect(jobNotices({ ttl: 7200, content, deliverAt: local }, NOW)).toEqual([
      'the job expires at 2026-01-01T02:00:00.000Z (ttl, which counts from acceptance), less than a day after it was accepted (a local time without a date falls within the next day): devices whose local 09:00 comes after that get nothing (recorded as expired); for every device, give a ttl of at least 26 hours or an expiresAt 26 hours ahead (the day the clocks go back lasts 25, and 26 in Antarctica/Troll), and deliverAt.expiresAfter (e.g. "PT2H") to keep each device\'s push from going later than that after its own local time',
    ]);
    expect(jobNotices({ expiresAt: '2026-01-01T12:00:00Z', content, deliverAt: local }, NOW)).toEqual([expect.stringMatching(/^the job expires at 2026-01-01T12:00:00\.000Z \(expiresAt\), less than a day/) as unknown]);
    // A VoIP push without an expiry is now-or-never.
    expect(jobNotices({ content: { pushType: 'voip', data: { c: '1' } }, deliverAt: local }, NOW)).toEqual([expect.stringMatching(/\(now-or-never: sent within 60 s of acceptance or not at all\)/) as unknown]);
    // A day or more, no expiry, an instant: every device's local time comes before it, or the 400 of expiresBeforeDue decides.
    expect(jobNotices({ ttl: 86_400, content, deliverAt: local }, NOW)).toEqual([]);
    expect(jobNotices({ content, deliverAt: local }, NOW)).toEqual([]);
    expect(jobNotices({ ttl: 7200, content, deliverAt: { at: '2026-01-01T01:00:00Z' } }, NOW)).toEqual([]);
  });

  it("says so when a local time on a date expires before that time in the westernmost zones: some get it (Tokyo), others nothing (New York)", () => {
    const content = { title: 't' };
    const accepted = new Date('2025-06-01T12:00:00Z');
    const dated = { localTime: '09:00', date: '2025-06-02' };
    expect(jobNotices({ ttl: 86_400, content, deliverAt: dated }, accepted)).toEqual([
      'the job expires at 2025-06-02T12:00:00.000Z (ttl, which counts from acceptance), before 09:00 on 2025-06-02 in the westernmost zones (UTC−12, 2025-06-02T21:00:00.000Z): devices whose local 09:00 comes after that get nothing (recorded as expired); for every device, give an expiresAt after 2025-06-02T21:00:00.000Z, and deliverAt.expiresAfter (e.g. "PT2H") to keep each device\'s push from going later than that after its own local time',
    ]);
    // A job that bounds each push already is not told to.
    expect(jobNotices({ ttl: 86_400, content, deliverAt: { ...dated, expiresAfter: 'PT2H' } }, accepted)).toEqual([
      'the job expires at 2025-06-02T12:00:00.000Z (ttl, which counts from acceptance), before 09:00 on 2025-06-02 in the westernmost zones (UTC−12, 2025-06-02T21:00:00.000Z): devices whose local 09:00 comes after that get nothing (recorded as expired); for every device, give an expiresAt after 2025-06-02T21:00:00.000Z',
    ]);
    // Due at its expiry is dropped: 21:00 exactly still misses UTC−12; a second later reaches it.
    expect(jobNotices({ expiresAt: '2025-06-02T21:00:00Z', content, deliverAt: dated }, accepted)).toEqual([expect.stringMatching(/^the job expires at 2025-06-02T21:00:00\.000Z \(expiresAt\)/) as unknown]);
    expect(jobNotices({ expiresAt: '2025-06-02T21:00:01Z', content, deliverAt: dated }, accepted)).toEqual([]);
    expect(jobNotices({ content, deliverAt: dated }, accepted)).toEqual([]);
  });

  it('says nothing of zones for a job expired when accepted (a duplicate answered after its expiry): no zone gets it', () => {
    const content = { title: 't' };
    expect(jobNotices({ expiresAt: '2025-12-31T23:00:00Z', content, deliverAt: { localTime: '09:00' } }, NOW)).toEqual([]);
    expect(jobNotices({ expiresAt: '2026-01-01T00:00:00Z', content, deliverAt: { localTime: '09:00', date: '2026-01-01' } }, NOW)).toEqual([]);
  });
});

describe("entryConformanceIssues: a new job's rules where it enters, beyond every push's", () => {
  // Data and an image that fill an iPhone's 4 KB once FCM's own keys are in (gcm.message_id, fcm_options.image).
  const full = (imageUrl?: string) => job({ content: { title: 'Hi', data: { blob: 'y'.repeat(3_830) }, ...(imageUrl !== undefined && { imageUrl }) } });
  const image = `https://cdn.example/${'i'.repeat(130)}.png`;

  it('refuses a job whose APNs payload through FCM outgrows 4 KB with FCM\'s keys, which jobConformanceIssues (the demuxer\'s, the pushers\') lets through', () => {
    expect(entryConformanceIssues(full(image), NOW)).toEqual([{ path: 'content', message: expect.stringMatching(/^FCM: payload too large: the APNs payload FCM forwards to iOS, with FCM's own keys, is 4\d{3} bytes/) as unknown }]);
    expect(jobConformanceIssues(full(image), { web: false }, NOW)).toEqual([]);
    expect(entryConformanceIssues(full(), NOW)).toEqual([]);
  });

  it('leaves a job that reaches no FCM device alone (a VoIP push)', () => {
    expect(entryConformanceIssues(job({ content: { pushType: 'voip', data: { blob: 'y'.repeat(4_000) } } }), NOW)).toEqual([]);
  });
});
