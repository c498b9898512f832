import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, specMinute, specRegister, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic, deviceMemberId } from './topic-store.ts';
import { deleteTopic } from './topic-deletion.ts';
import { readAudienceChunk } from './audience-stream.ts';

// Token rotation (a register naming its previousToken) and topics: the new token takes the old
// one's device memberships in the statement that links them (device-registration.ts,
// replacedMembershipsSql), so topic pushes reach the phone without the app subscribing again.

let t: SpecDatabase;
const APP = 'app-a';
beforeAll(async () => {
  t = await createSpecDatabase('device_replaced_topics');
  await t.db.apps.upsert({ id: APP });
});
afterAll(() => t?.drop());

let n = 0;
const nextToken = () => `tok-${++n}-${Math.random().toString(36).slice(2)}`;
const nextTopic = () => `topic-${++n}`;
const at = specMinute;

const register = (token: string, minute: number, userId: string, previousToken?: string): Registration =>
  specRegister(token, minute, userId, { app: APP, ...(previousToken !== undefined && { previousToken }) });
const apply = (reg: Registration) => t.db.devices.applyRegistration(reg);
const subscribe = async (topic: string, token: string, subscribed: boolean, eventAt: string) =>
  (await applyTopicMemberships(t.db.kysely, [{ app: APP, topic, member: { platform: 'apns', token }, subscribed, eventAt }]))[0];
const topicWith = async (...memberships: ReadonlyArray<[token: string, subscribed: boolean, minute: number]>) => {
  const topic = nextTopic();
  await createTopic(t.db.kysely, APP, topic);
  for (const [token, subscribed, minute] of memberships)
    expect(await subscribe(topic, token, subscribed, at(minute))).toBe('applied');
  return topic;
};
/** The token's membership row of the topic (undefined: none). */
const membership = async (topic: string, token: string) => {
  const row = await t.db.kysely
    .selectFrom('topic_members')
    .select(['subscribed', 'event_at', 'changed_xid'])
    .where('app', '=', APP)
    .where('topic', '=', topic)
    .where('member_kind', '=', 'device')
    .where('member_id', '=', deviceMemberId('apns', token))
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : { subscribed: row.subscribed, eventAt: row.event_at.toISOString(), changedXid: row.changed_xid };
};
const subscribers = async (topic: string) =>
  Number(
    (
      await t.db.kysely
        .selectFrom('topics')
        .select('subscriber_count')
        .where('app', '=', APP)
        .where('name', '=', topic)
        .executeTakeFirstOrThrow()
    ).subscriber_count,
  );
/**
 * The tokens a topic fan-out reads (every chunk), with whether each is reached as a device member by
 * itself: read now, or as a fan-out that started at the snapshot `asOf` reads them.
 */
const topicAudience = async (topic: string, asOf?: string) => {
  const reached: { token: string; toDevice: boolean }[] = [];
  let after: string | null = null;
  for (let i = 0; i < 100; i++) {
    const chunk = await readAudienceChunk(t.db, {
      app: APP,
      audience: { kind: 'topic', topic },
      category: 'news',
      after,
      limit: 10,
      now: new Date(),
      ...(asOf !== undefined && { asOf }),
    });
    reached.push(...chunk.devices.map((d) => ({ token: d.token, toDevice: d.toDevice === true })));
    after = chunk.next;
    if (after === null) break;
  }
  return reached;
};

describe("a rotation gives the new token the old token's topic memberships", () => {
  it('copies each subscribed membership of the old token, stamped with the rotation, counted; the old rows stay as they were', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const [news, sports] = [await topicWith([old, true, 2]), await topicWith([old, true, 3])];
    const oldBefore = [await membership(news, old), await membership(sports, old)];
    expect(await apply(register(fresh, 5, 'alice', old))).toBe('applied');
    for (const topic of [news, sports]) {
      const copied = await membership(topic, fresh);
      // The rotation's time, not the old membership's: a later event of the new token wins, an earlier one is stale.
      expect(copied).toMatchObject({ subscribed: true, eventAt: at(5) });
      expect(copied?.changedXid).not.toBeNull();
      expect(await subscribers(topic)).toBe(2);
    }
    expect([await membership(news, old), await membership(sports, old)]).toEqual(oldBefore);
    // A late subscribe of the new token from before the rotation is stale; its unsubscribe after it applies.
    expect(await subscribe(news, fresh, false, at(4))).toBe('stale');
    expect(await subscribe(news, fresh, false, at(6))).toBe('applied');
    // An unsubscribe naming the old token after the rotation leaves the new token subscribed.
    expect(await subscribe(sports, old, false, at(7))).toBe('applied');
    expect(await membership(sports, fresh)).toMatchObject({ subscribed: true, eventAt: at(5) });
  });

  it('does not copy a membership the old token unsubscribed from', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const left = await topicWith([old, true, 2], [old, false, 3]);
    const kept = await topicWith([old, true, 2]);
    expect(await apply(register(fresh, 5, 'alice', old))).toBe('applied');
    expect(await membership(left, fresh)).toBeUndefined();
    expect(await subscribers(left)).toBe(0);
    expect(await membership(kept, fresh)).toMatchObject({ subscribed: true, eventAt: at(5) });
  });

  it("in a batch of rotations, each new token takes only its own old token's subscribed memberships", async () => {
    const [aliceOld, aliceNew, bobOld, bobNew] = [nextToken(), nextToken(), nextToken(), nextToken()];
    await apply(register(aliceOld, 1, 'alice'));
    await apply(register(bobOld, 1, 'bob'));
    // One topic: alice's old token in it, bob's left it.
    const topic = await topicWith([aliceOld, true, 2], [bobOld, true, 2], [bobOld, false, 3]);
    expect(
      await t.db.devices.applyRegistrations([register(aliceNew, 5, 'alice', aliceOld), register(bobNew, 5, 'bob', bobOld)]),
    ).toEqual(['applied', 'applied']);
    expect(await membership(topic, aliceNew)).toMatchObject({ subscribed: true, eventAt: at(5) });
    expect(await membership(topic, bobNew)).toBeUndefined();
    expect(await subscribers(topic)).toBe(2);
  });

  it("keeps the new token's own membership event later than the rotation; an earlier one gives way to it", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    // The app unsubscribed the new token from `later` after the rotation, delivered before the register.
    const later = await topicWith([old, true, 2], [fresh, false, 9]);
    // The new token left `earlier` before the rotation; the rotation, later, subscribes it.
    const earlier = await topicWith([old, true, 2], [fresh, false, 3]);
    // The new token was already in `already`: it stays subscribed, not flipped (its changed_xid stays).
    const already = await topicWith([old, true, 2], [fresh, true, 3]);
    const alreadyXid = (await membership(already, fresh))?.changedXid;
    expect(await apply(register(fresh, 5, 'alice', old))).toBe('applied');
    expect(await membership(later, fresh)).toMatchObject({ subscribed: false, eventAt: at(9) });
    expect(await subscribers(later)).toBe(1);
    expect(await membership(earlier, fresh)).toMatchObject({ subscribed: true, eventAt: at(5) });
    expect(await subscribers(earlier)).toBe(2);
    expect(await membership(already, fresh)).toEqual({ subscribed: true, eventAt: at(5), changedXid: alreadyXid });
    expect(await subscribers(already)).toBe(2);
  });

  it("does not bring back a membership of a deleted topic, nor of one deleted after the rotation's time and created again", async () => {
    // Deleted: its member rows are left until their removal (topic-deletion.ts); the rotation, stamped after the deletion, skips them.
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const gone = await topicWith([old, true, 2]);
    expect(await deleteTopic(t.db.kysely, APP, gone)).toBe(true);
    expect(await apply({ ...register(fresh, 0, 'alice', old), eventAt: new Date(Date.now() + 1_000).toISOString() })).toBe(
      'applied',
    );
    expect(await membership(gone, fresh)).toBeUndefined();
    // Deleted (by the database's clock, now) after the time of a rotation delivered late, and created again; the old token subscribed to it since.
    const [old2, fresh2] = [nextToken(), nextToken()];
    await apply(register(old2, 1, 'alice'));
    const again = await topicWith([old2, true, 2]);
    expect(await deleteTopic(t.db.kysely, APP, again)).toBe(true);
    await createTopic(t.db.kysely, APP, again);
    expect(await subscribe(again, old2, true, new Date(Date.now() + 1_000).toISOString())).toBe('applied');
    expect(await apply(register(fresh2, 5, 'alice', old2))).toBe('applied');
    expect(await membership(again, fresh2)).toBeUndefined();
    expect(await subscribers(again)).toBe(1);
  });

  it('waits for a deletion of the topic under way, and then copies nothing into it', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const topic = await topicWith([old, true, 2]);
    let rotated: Promise<unknown> | undefined;
    await t.db.kysely.transaction().execute(async (tx) => {
      expect(await deleteTopic(tx, APP, topic)).toBe(true);
      rotated = apply(register(fresh, 5, 'alice', old));
      // The rotation holds the topic's row up (it waits for the deletion's transaction).
      expect(await Promise.race([rotated, new Promise((r) => setTimeout(() => r('waiting'), 300))])).toBe('waiting');
    });
    expect(await rotated).toBe('applied');
    expect(await membership(topic, fresh)).toBeUndefined();
  });

  it('a topic fan-out after the rotation reaches the new token as a device member, not the old one; one started before it reaches the new token through the old membership', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const topic = await topicWith([old, true, 2]);
    expect(await topicAudience(topic)).toEqual([{ token: old, toDevice: true }]);
    const asOf = (await sql<{ s: string }>`select pg_current_snapshot()::text as s`.execute(t.db.kysely)).rows[0]?.s ?? '';
    expect(await apply(register(fresh, 5, 'alice', old))).toBe('applied');
    expect(await topicAudience(topic)).toEqual([{ token: fresh, toDevice: true }]);
    // The new membership changed since that fan-out started (changed_xid), and is left out as any
    // such; the old one, read after the rotation, is its new token's. Read before it, its push was
    // made for the old token and follows replaced_by (delivery-ledger.ts).
    expect(await topicAudience(topic, asOf)).toEqual([{ token: fresh, toDevice: true }]);
  });

  it('a register without previousToken, or a rotation that links nothing, writes no membership', async () => {
    const [old, fresh, bobs, other] = [nextToken(), nextToken(), nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    await apply(register(bobs, 1, 'bob'));
    const topic = await topicWith([old, true, 2], [bobs, true, 2]);
    const rows = () =>
      t.db.kysely.selectFrom('topic_members').selectAll().where('app', '=', APP).orderBy('topic').orderBy('member_id').execute();
    const before = await rows();
    // A plain register of a new token of hers.
    expect(await apply(register(fresh, 5, 'alice'))).toBe('applied');
    // A rotation naming bob's token: not hers, nothing linked.
    expect(await apply(register(other, 6, 'alice', bobs))).toBe('applied');
    expect(
      (await t.db.kysely.selectFrom('devices').select('invalidated_at').where('token', '=', bobs).executeTakeFirstOrThrow())
        .invalidated_at,
    ).toBeNull();
    expect(await rows()).toEqual(before);
    expect(await subscribers(topic)).toBe(2);
  });

  it("a rotation sharing a batch with the old token's register copies its memberships; sent again it copies nothing", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    const topic = await topicWith([old, true, 2]);
    expect(await t.db.devices.applyRegistrations([register(fresh, 5, 'alice', old), register(old, 4, 'alice')])).toEqual([
      'applied',
      'applied',
    ]);
    expect(await membership(topic, fresh)).toMatchObject({ subscribed: true, eventAt: at(5) });
    // The new token leaves the topic at the rotation's time; the rotation delivered again links nothing, so copies nothing.
    expect(await subscribe(topic, fresh, false, at(5))).toBe('applied');
    expect(await apply(register(fresh, 5, 'alice', old))).toBe('applied');
    expect(await membership(topic, fresh)).toMatchObject({ subscribed: false, eventAt: at(5) });
    expect(await subscribers(topic)).toBe(1);
  });
});
