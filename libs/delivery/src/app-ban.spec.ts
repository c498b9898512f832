import { createLogger } from '@herald/logging';
import { classifyApnsFailure, classifyFcmError, classifyWebPushAnswer } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { describe, expect, it, vi } from 'vitest';
import { DELIVERED_LATELY_MS, createAppBans, isCredentialFailure, keptToken, settingsKeyOf } from './app-ban.ts';

const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
const bad = { kind: 'permanent', reason: 'InvalidProviderToken' } as const;

describe('app bans', () => {
  it('knows credential and topic failures from other permanent ones', () => {
    expect(isCredentialFailure(bad)).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'TopicDisallowed' })).toBe(true);
    // FCM's THIRD_PARTY_AUTH_ERROR is the APNs or web credentials kept in Firebase: the app's Android pushes still go.
    expect(isCredentialFailure({ kind: 'permanent', reason: 'third-party-auth-error: PERMISSION_DENIED' })).toBe(false);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'credentials: app "x" has no APNs credentials' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'PayloadTooLarge' })).toBe(false);
    // Web Push: a refused VAPID JWT or no keys at all is the app's; a key mismatch is one subscription's.
    expect(isCredentialFailure({ kind: 'permanent', reason: 'VapidUnauthorized: the push service refused the VAPID JWT (HTTP 401)' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'no-vapid-keys: app "x" has no VAPID keys' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'VapidKeyMismatch: the subscription belongs to another application server key (HTTP 403)' })).toBe(false);
    // An endpoint pointing into the deployment's network is that subscription's, not the app's credentials.
    expect(isCredentialFailure({ kind: 'permanent', reason: 'endpoint-address-refused: push.example.com resolves to 10.0.0.5, not a public address' })).toBe(false);
    // A 403 is the app's when it says the JWT is bad (Apple's push service, FCM's), one subscription's otherwise.
    expect(isCredentialFailure(classifyWebPushAnswer({ status: 403, body: '{"reason":"BadJwtToken"}' }))).toBe(true);
    expect(isCredentialFailure(classifyWebPushAnswer({ status: 403, body: 'invalid JWT provided' }))).toBe(true);
    expect(isCredentialFailure(classifyWebPushAnswer({ status: 403, body: 'the key does not match this subscription' }))).toBe(false);
    expect(isCredentialFailure({ kind: 'transient', reason: 'InvalidProviderToken' })).toBe(false);
    // Only the leading code counts, not the provider's words after it: a push service's 403 page
    // titled "Forbidden", an FCM bad-message answer mentioning PERMISSION_DENIED, are one push's.
    expect(isCredentialFailure(classifyWebPushAnswer({ status: 403, body: '<html><title>Error 403 (Forbidden)</title></html>' }))).toBe(false);
    expect(isCredentialFailure(classifyWebPushAnswer({ status: 400, body: '{"error":{"status":"PERMISSION_DENIED"}}' }))).toBe(false);
    expect(isCredentialFailure(classifyFcmError({ code: 'INVALID_ARGUMENT', message: 'data key uses PERMISSION_DENIED', httpStatus: 400 }))).toBe(false);
    expect(isCredentialFailure(classifyFcmError({ code: 'PERMISSION_DENIED', message: 'denied', httpStatus: 403 }))).toBe(true);
    expect(isCredentialFailure(classifyApnsFailure({ status: 403, reason: 'Forbidden' }))).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'no APNs topic for this app' })).toBe(true);
  });

  it('bans after threshold failures within the window, for the cool-off, with a metric', async () => {
    let t = 0;
    const registry = new Registry();
    const bans = createAppBans({ threshold: 3, windowMs: 1000, cooldownMs: 5000 }, logger, registry, () => t);
    bans.observe('a', bad);
    t = 900;
    bans.observe('a', bad);
    t = 1500; // the first failure left the window
    bans.observe('a', bad);
    expect(bans.banned('a')).toBeUndefined();
    bans.observe('a', bad);
    expect(bans.banned('a')?.until.getTime()).toBe(6500);
    expect(bans.banned('b')).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 1/);
    t = 6500;
    // Over without another push of the app: the scrape itself ends it (a critical alarm would stay up otherwise).
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 0/);
    expect(bans.banned('a')).toBeUndefined();
  });

  // The runbook: rotate the app's credentials, then replay what was parked. Replayed under a ban that outlived the fix, they were parked again.
  it("ends a ban once the app's credentials, topic or endpoint change, and counts no failure made under its earlier settings", async () => {
    let t = 0;
    const registry = new Registry();
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 300_000 }, logger, registry, () => t);
    const before = settingsKeyOf({ id: 'a', updatedAt: new Date(1000), credentialsVersion: 3 });
    const rotated = settingsKeyOf({ id: 'a', updatedAt: new Date(2000), credentialsVersion: 4 });
    bans.observe('a', bad, before);
    bans.observe('a', bad, before);
    expect(bans.banned('a', before)).toBeDefined();
    t = 10_000;
    expect(bans.banned('a', rotated)).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 0/);
    // One failure under the new settings, beside the two under the old: below the threshold of two.
    bans.observe('a', bad, before);
    bans.observe('a', bad, rotated);
    expect(bans.banned('a', rotated)).toBeUndefined();
    bans.observe('a', bad, rotated);
    expect(bans.banned('a', rotated)).toBeDefined();
    // Sends still under way with the old settings when the ban lifted ban nothing more.
    const third = settingsKeyOf({ id: 'a', updatedAt: new Date(3000), credentialsVersion: 5 });
    expect(bans.banned('a', third)).toBeUndefined();
    for (let i = 0; i < 3; i++) bans.observe('a', bad, rotated);
    expect(bans.banned('a', third)).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 0/);
  });

  // Mozilla's push service refusing the app's JWT parked its pushes to Chrome's and Apple's too, which take it.
  it("bans a Web Push service's refusals of the VAPID JWT at that push service only, with its own gauge series and alarm; other credential failures ban the app", async () => {
    let t = 0;
    const spy = createLogger({ service: 'spec', level: 'silent', format: 'json' });
    const errors = vi.spyOn(spy, 'error');
    const registry = new Registry();
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 300_000 }, spy, registry, () => t);
    const settings = settingsKeyOf({ id: 'a', updatedAt: new Date(1000), credentialsVersion: 3 });
    const refused = classifyWebPushAnswer({ status: 401, body: 'VAPID JWT invalid' });
    const [mozilla, fcm] = ['updates.push.services.mozilla.com', 'fcm.googleapis.com'];
    // One refusal at each: two push services' answers do not add up.
    bans.observe('a', refused, settings, mozilla);
    bans.observe('a', refused, settings, fcm);
    expect(bans.banned('a', settings, mozilla)).toBeUndefined();
    bans.observe('a', refused, settings, mozilla);
    expect(bans.banned('a', settings, mozilla)).toEqual({ until: new Date(300_000), reason: refused.kind === 'permanent' ? refused.reason : '', service: mozilla });
    expect(bans.banned('a', settings, fcm)).toBeUndefined();
    expect(bans.banned('a', settings)).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(new RegExp(`herald_app_banned\\{app="a",push_service="${mozilla.replace(/\./g, '\\.')}"\\} 1`));
    expect(await registry.getSingleMetricAsString('herald_app_banned')).not.toMatch(/herald_app_banned\{app="a"\} 1/);
    expect(errors.mock.calls).toEqual([[expect.objectContaining({ alarm: 'app-banned', app: 'a', push_service: mozilla }), expect.stringMatching(`^app banned at push service ${mozilla}: `)]]);
    // A change of the app ends it, as an app's ban.
    const changed = settingsKeyOf({ id: 'a', updatedAt: new Date(2000), credentialsVersion: 4 });
    t = 1000;
    expect(bans.banned('a', changed, mozilla)).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(new RegExp(`herald_app_banned\\{app="a",push_service="${mozilla.replace(/\./g, '\\.')}"\\} 0`));
    // No keys at all, or credentials that cannot be loaded, fail at every push service: the app's ban, whatever the push went to.
    const b = settingsKeyOf({ id: 'b', updatedAt: new Date(1000) });
    for (let i = 0; i < 2; i++) bans.observe('b', { kind: 'permanent', reason: 'no-vapid-keys: app "b" has no VAPID keys' }, b, mozilla);
    expect(bans.banned('b', b, fcm)).toMatchObject({ reason: expect.stringMatching(/^no-vapid-keys/) as unknown });
    expect(bans.banned('b', b)).not.toHaveProperty('service');
    // APNs and FCM credential failures name no push service: the app's, as before.
    const c = settingsKeyOf({ id: 'c', updatedAt: new Date(1000) });
    for (let i = 0; i < 2; i++) bans.observe('c', bad, c);
    expect(bans.banned('c', c, fcm)).toBeDefined();
  });

  // Every series of a Herald process carries `service`, its own name (createMetricsRegistry): named
  // `service` too, a push service's ban overwrote it, and an app's ban read service="web-pusher",
  // so the alert could not tell the two apart.
  it("names the push service a ban holds at in `push_service`, beside the process's own `service`", async () => {
    const registry = new Registry();
    registry.setDefaultLabels({ service: 'web-pusher' });
    const bans = createAppBans({ threshold: 1, windowMs: 60_000, cooldownMs: 60_000 }, logger, registry);
    bans.observe('a', classifyWebPushAnswer({ status: 401, body: 'VAPID JWT invalid' }), undefined, 'web.push.apple.com');
    bans.observe('b', { kind: 'permanent', reason: 'no-vapid-keys: app "b" has no VAPID keys' }, undefined, 'web.push.apple.com');
    const text = await registry.getSingleMetricAsString('herald_app_banned');
    expect(text).toContain('herald_app_banned{app="a",push_service="web.push.apple.com",service="web-pusher"} 1');
    expect(text).toContain('herald_app_banned{app="b",service="web-pusher"} 1');
  });

  // Before: the ban held at the old name on the gauge and the alert (HeraldAppBanned) for its whole
  // cool-off, as only a push to the same push service looked it up again, and none would.
  it("a change of the app that renames the push service a ban holds at (its allow-list edited) ends that ban too, and failures sent before it ban nothing", async () => {
    let t = 0;
    const spy = createLogger({ service: 'spec', level: 'silent', format: 'json' });
    const warnings = vi.spyOn(spy, 'warn');
    const errors = vi.spyOn(spy, 'error');
    const registry = new Registry();
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 300_000 }, spy, registry, () => t);
    const series = async (service: string): Promise<string | undefined> =>
      new RegExp(`herald_app_banned\\{app="a",push_service="${service.replace(/[.*]/g, '\\$&')}"\\} (\\d)`).exec(await registry.getSingleMetricAsString('herald_app_banned'))?.[1];
    const refused = classifyWebPushAnswer({ status: 401, body: 'VAPID JWT invalid' });
    const before = settingsKeyOf({ id: 'a', updatedAt: new Date(1000), credentialsVersion: 3 });
    // The allow-list held "*.push.example.net": its hosts were one push service, banned.
    expect(bans.banned('a', before, '*.push.example.net')).toBeUndefined();
    for (let i = 0; i < 2; i++) bans.observe('a', refused, before, '*.push.example.net');
    expect(await series('*.push.example.net')).toBe('1');
    // The fix named the host instead (and the subject): the same endpoints' push service is "eu.push.example.net" now.
    const fixed = settingsKeyOf({ id: 'a', updatedAt: new Date(2000), credentialsVersion: 4 });
    t = 1000;
    expect(bans.banned('a', fixed, 'eu.push.example.net')).toBeUndefined();
    expect(await series('*.push.example.net')).toBe('0');
    expect(warnings.mock.calls).toEqual([[expect.objectContaining({ alarm: 'app-ban-lifted', app: 'a', push_service: '*.push.example.net' }), expect.stringMatching(/lifted \(the app was changed since/)]]);
    // Sends under the old settings answered after it ban nothing, at the old name or anywhere.
    for (let i = 0; i < 2; i++) {
      bans.observe('a', refused, before, '*.push.example.net');
      bans.observe('a', refused, before, 'fcm.googleapis.com');
    }
    expect(await series('*.push.example.net')).toBe('0');
    expect(await series('fcm.googleapis.com')).toBeUndefined();
    expect(errors).toHaveBeenCalledTimes(1);
    // Under the present settings, refusals still ban.
    for (let i = 0; i < 2; i++) bans.observe('a', refused, fixed, 'eu.push.example.net');
    expect(bans.banned('a', fixed, 'eu.push.example.net')).toMatchObject({ service: 'eu.push.example.net' });
  });

  it('ignores delivered pushes and non-credential failures', () => {
    const bans = createAppBans({ threshold: 1, windowMs: 1000, cooldownMs: 1000 }, logger, new Registry());
    bans.observe('a', { kind: 'delivered' });
    bans.observe('a', { kind: 'permanent', reason: 'BadExpirationDate' });
    expect(bans.banned('a')).toBeUndefined();
  });
});

/**
 * Bans and alarms as the classifiers' answers drive them. What the pusher does with each answer
 * (invalidate, park, ban) is driven through the pusher itself in provider-answers.int.spec.ts.
 */
describe('provider answers: bans and alarms', () => {
  it("FCM's THIRD_PARTY_AUTH_ERROR (Firebase's APNs or web credentials are wrong) bans nothing, however often: the app's Android pushes go on", () => {
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 60_000 }, createLogger({ service: 'spec', level: 'silent' }), new Registry());
    for (const code of ['THIRD_PARTY_AUTH_ERROR', 'messaging/third-party-auth-error']) {
      const result = classifyFcmError({ code, httpStatus: 401 });
      for (let i = 0; i < 3; i++) bans.observe('a', result);
    }
    expect(bans.banned('a')).toBeUndefined();
  });

  it('a ban is started by those answers, with an alarm, and by no dead-token answer', () => {
    const spy = createLogger({ service: 'spec', level: 'silent', format: 'json' });
    const errors = vi.spyOn(spy, 'error');
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 60_000 }, spy, new Registry());
    for (let i = 0; i < 5; i++) bans.observe('a', classifyApnsFailure({ status: 400, reason: 'BadDeviceToken' }));
    expect(bans.banned('a')).toBeUndefined();
    bans.observe('b', classifyApnsFailure({ status: 403, reason: 'InvalidProviderToken' }));
    bans.observe('b', classifyApnsFailure({ status: 400, reason: 'TopicDisallowed' }));
    expect(bans.banned('b')?.reason).toBe('TopicDisallowed');
    expect(errors.mock.calls.map(([fields]) => fields)).toEqual([expect.objectContaining({ alarm: 'app-banned', app: 'b' })]);
  });

  it("one delivery vouches for the app's present settings for an hour, in this process: a change of them starts again from nothing", () => {
    let t = 0;
    const bans = createAppBans({ threshold: 2, windowMs: 60_000, cooldownMs: 60_000 }, logger, new Registry(), () => t);
    const app = { id: 'a', updatedAt: new Date(1000), credentialsVersion: 3 };
    expect(bans.deliversLately(settingsKeyOf(app))).toBe(false);
    bans.delivered(settingsKeyOf(app));
    t = DELIVERED_LATELY_MS - 1;
    expect(bans.deliversLately(settingsKeyOf(app))).toBe(true);
    expect(bans.deliversLately(settingsKeyOf({ id: 'b', updatedAt: new Date(1000), credentialsVersion: 3 }))).toBe(false);
    // An operator changed the app's endpoint or topic (updated_at moves), or its credentials.
    expect(bans.deliversLately(settingsKeyOf({ ...app, updatedAt: new Date(2000) }))).toBe(false);
    expect(bans.deliversLately(settingsKeyOf({ ...app, credentialsVersion: 4 }))).toBe(false);
    t = DELIVERED_LATELY_MS + 1;
    expect(bans.deliversLately(settingsKeyOf(app))).toBe(false);
  });

  it('kept tokens raise the app-tokens-kept alarm at the threshold within the window, and never a ban', () => {
    const spy = createLogger({ service: 'spec', level: 'silent', format: 'json' });
    const errors = vi.spyOn(spy, 'error');
    const registry = new Registry();
    const bans = createAppBans({ threshold: 3, windowMs: 60_000, cooldownMs: 60_000 }, spy, registry);
    const kept = keptToken({ kind: 'dead-token', reason: 'BadDeviceToken', unlessAppFails: true });
    for (let i = 0; i < 2; i++) bans.kept('a', kept);
    expect(errors).not.toHaveBeenCalled();
    bans.kept('a', kept);
    expect(errors.mock.calls.map(([fields]) => fields)).toEqual([expect.objectContaining({ alarm: 'app-tokens-kept', app: 'a' })]);
    expect(bans.banned('a')).toBeUndefined();
  });
});
