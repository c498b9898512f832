import type { ApiKeyRow } from '@herald/db';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import { createSubscription, deleteSubscription, getSubscription, listSubscriptions, rotateSubscriptionSecret, type SubscriptionServiceDeps } from './subscription-service.ts';

let t: TestDatabase;
let deps: SubscriptionServiceDeps;

beforeAll(async () => {
  t = await createTestDatabase('api_subs');
  deps = { subscriptions: t.db.subscriptions, resourceTypes: ['campaign'], allowHttpLocalhost: false, maxSubscriptionsPerTeam: 3 };
});
afterAll(() => t?.drop());

const keyOf = (team: string): ApiKeyRow => ({ id: `key-${team}`, team, apps: ['*'], createdAt: new Date(), revokedAt: null, kind: 'team' });
const body = (resourceId: string) => ({ callbackUrl: 'https://hooks.example.com/h', resourceType: 'campaign', resourceId });

/** The ApiError a call was refused with. */
async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const err = await call.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

describe('webhook subscriptions API: per-team cap and paging', () => {
  it('answers 409 subscription-limit past WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM, counting only the team; a delete makes room', async () => {
    const key = keyOf('loop');
    const made = [];
    for (const id of ['c1', 'c2', 'c3']) made.push(await createSubscription(body(id), key, deps));
    const err = await refusal(createSubscription(body('c4'), key, deps));
    expect([err.status, err.code]).toEqual([409, 'subscription-limit']);
    expect(err.message).toMatch(/team "loop" has 3 subscriptions, the most allowed \(WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM\)/);
    expect((await listSubscriptions({}, key, deps)).subscriptions).toHaveLength(3);
    expect(await createSubscription(body('c1'), keyOf('neighbour'), deps)).toMatchObject({ team: 'neighbour' });
    await deleteSubscription(made[0]?.id ?? '', key, deps);
    expect(await createSubscription(body('c4'), key, deps)).toMatchObject({ resourceId: 'c4' });
  });

  it("answers 409 subscription-exists naming the team's subscription of the same callback URL and resource (each change went twice, a thousand times for a team's copies of a \"*\")", async () => {
    const key = keyOf('copier');
    const first = await createSubscription(body('*'), key, deps);
    const err = await refusal(createSubscription({ ...body('*'), secret: 'whsec_another-secret-of-32-characters' }, key, deps));
    expect([err.status, err.code]).toEqual([409, 'subscription-exists']);
    expect(err.message).toContain(`subscription ${first.id} already sends campaign/* to this callbackUrl`);
    expect((await listSubscriptions({}, key, deps)).subscriptions.map((s) => s.id)).toEqual([first.id]);
    // Another resource, another URL, or another team's same subscription are their own.
    expect(await createSubscription(body('c1'), key, deps)).toMatchObject({ resourceId: 'c1' });
    expect(await createSubscription({ ...body('*'), callbackUrl: 'https://hooks.example.com/other' }, key, deps)).toMatchObject({ resourceId: '*' });
    expect(await createSubscription(body('*'), keyOf('copier-neighbour'), deps)).toMatchObject({ team: 'copier-neighbour' });
  });

  it('pages the list with limit and after; next is null on the last page', async () => {
    const key = keyOf('pager');
    const ids: string[] = [];
    for (const id of ['c1', 'c2', 'c3']) ids.push((await createSubscription(body(id), key, deps)).id);
    ids.sort();
    const first = await listSubscriptions({ limit: '2' }, key, deps);
    expect(first.subscriptions.map((s) => s.id)).toEqual(ids.slice(0, 2));
    expect(first.next).toBe(ids[1]);
    const second = await listSubscriptions({ limit: '2', after: first.next ?? '' }, key, deps);
    expect(second).toMatchObject({ subscriptions: [expect.objectContaining({ id: ids[2] })], next: null });
    expect((await listSubscriptions(undefined, key, deps)).next).toBeNull();
    const bad = await refusal(listSubscriptions({ limit: '0', after: 'nope' }, key, deps));
    expect([bad.status, bad.issues?.map((i) => i.path)]).toEqual([400, ['limit', 'after']]);
  });
});

describe('webhook subscriptions API: rotating the secret', () => {
  it('answers the new secret once, keeps the previous signing for keepPreviousForS, and refuses another team and a bad window by field', async () => {
    const key = keyOf('rotator');
    const made = await createSubscription(body('r1'), key, deps);
    expect(made.previousSecretExpiresAt).toBeNull();
    const before = Date.now();
    const rotated = await rotateSubscriptionSecret(made.id, { keepPreviousForS: 3600 }, key, deps);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(made.secret);
    const expires = Date.parse(rotated.previousSecretExpiresAt ?? '');
    expect(expires).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    // Stored for the pushers: the new secret, the previous one until then.
    const row = await t.db.subscriptions.getForTeam('rotator', made.id);
    expect(row?.secret).toBe(rotated.secret);
    expect(row?.previousSecret).toEqual({ secret: made.secret, until: new Date(expires) });
    // The view (GET) never shows a secret, only until when the previous one signs.
    const view = await getSubscription(made.id, key, deps);
    expect(view).not.toHaveProperty('secret');
    expect(view.previousSecretExpiresAt).toBe(rotated.previousSecretExpiresAt);
    // Rotated again within the window (a retry whose answer was lost): the secret from before the
    // first rotation, which the receiver may still hold, keeps signing; only the new one changes.
    const again = await rotateSubscriptionSecret(made.id, {}, key, deps);
    expect((await t.db.subscriptions.getForTeam('rotator', made.id))?.previousSecret?.secret).toBe(made.secret);
    expect(again.secret).not.toBe(rotated.secret);
    // ... until the first rotation's expiry, not pushed back (rotating often kept it signing for good).
    expect(again.previousSecretExpiresAt).toBe(rotated.previousSecretExpiresAt);
    // A given secret; the previous dropped at once, and stored no more.
    const given = await rotateSubscriptionSecret(made.id, { secret: 'whsec_given_0123456789abcdef', keepPreviousForS: 0 }, key, deps);
    expect([given.secret, given.previousSecretExpiresAt]).toEqual(['whsec_given_0123456789abcdef', null]);
    expect((await t.db.subscriptions.getForTeam('rotator', made.id))?.previousSecret).toBeNull();
    expect((await refusal(rotateSubscriptionSecret(made.id, {}, keyOf('neighbour'), deps))).status).toBe(404);
    const bad = await refusal(rotateSubscriptionSecret(made.id, { keepPreviousForS: 8 * 86_400, secret: 'short' }, key, deps));
    expect([bad.status, bad.issues?.map((i) => i.path).sort()]).toEqual([400, ['keepPreviousForS', 'secret']]);
  });
});
