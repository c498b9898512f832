import { sql, type Kysely, type Selectable } from 'kysely';
import { normalizeDeviceToken, type Platform } from '@herald/contracts';
import type { HeraldTables, TopicsTable } from './tables.ts';
import { aheadMarkSql, appliedAtSql, laterEventSql } from './later-event.ts';
import { hasDeletedMembers, removeDeletedMembers } from './topic-deletion.ts';

/** A topic as listed: its member count is kept by triggers (migration 0020), so reading it is cheap. */
export interface TopicRow {
  app: string;
  name: string;
  subscribers: number;
  createdAt: Date;
}

/** One membership change: a user, or a single device ({platform, token}). */
export interface TopicMemberEvent {
  app: string;
  topic: string;
  member: { userId: string } | { platform: Platform; token: string };
  subscribed: boolean;
  eventAt: string;
}

export type TopicMemberResult = 'applied' | 'stale' | 'unknown-topic';

/** How a device member is stored: '<platform>:<token>' (APNs tokens lower-cased, like devices.token). */
export const deviceMemberId = (platform: Platform, token: string): string => `${platform}:${normalizeDeviceToken(platform, token)}`;

const memberOf = (e: TopicMemberEvent): { kind: 'user' | 'device'; id: string } =>
  'userId' in e.member ? { kind: 'user', id: e.member.userId } : { kind: 'device', id: deviceMemberId(e.member.platform, e.member.token) };

const toTopic = (r: { app: string; name: string; subscriber_count: string; created_at: Date }): TopicRow => ({
  app: r.app,
  name: r.name,
  subscribers: Number(r.subscriber_count),
  createdAt: r.created_at,
});

/** Times createTopic removes the members of the name's deleted topic before it gives up (a deletion of it racing each try). */
const CREATE_ATTEMPTS = 3;

/** How long createTopicWithin removes a deleted topic's leftover member rows by default before it says some remain. */
export const DEFAULT_TOPIC_CREATE_REMOVAL_MS = 2_000;

/** Pause between createTopicWithin's tries while another removal holds the last leftover rows (its statement about to commit). */
const RETRY_PAUSE_MS = 100;

/** createTopicWithin's outcome: 'members-remain' when leftover rows of a deleted topic of that name outlasted its time (nothing created). */
export type TopicCreation = { kind: 'created' | 'existed'; topic: TopicRow } | { kind: 'members-remain' };

export interface TopicCreateOptions {
  /** How long the leftover member rows are removed before it gives up (DEFAULT_TOPIC_CREATE_REMOVAL_MS), give or take one statement. */
  withinMs?: number;
  /** Member rows per delete statement (DEFAULT_TOPIC_DELETE_BATCH). */
  batchSize?: number;
}

/**
 * Creates the topic; `created` false when it existed (idempotent). Member rows of a topic of that
 * name deleted before and not yet removed (their removal under way in the background, or cut short
 * and left to the registrars' sweep) are removed first, however many, waiting for rows such a
 * removal holds: the new topic must not take them. A removal still under way deletes nothing once
 * the topic exists. Minutes for a topic of millions deleted moments ago: for a caller that can
 * wait (the CLI, which removes them itself first and says how it goes); one answering a request
 * calls createTopicWithin.
 */
export async function createTopic(db: Kysely<HeraldTables>, app: string, name: string): Promise<{ created: boolean; topic: TopicRow }> {
  for (let attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
    await removeDeletedMembers(db, app, name);
    const made = await insertOrFind(db, app, name);
    if (made.kind !== 'members-remain') return { created: made.kind === 'created', topic: made.topic };
  }
  throw new Error(`topic ${app}/${name}: the members of the topic of that name deleted before are still being removed; try again`);
}

/**
 * createTopic bounded in time, for the API: the leftover member rows of a deleted topic of that name
 * are removed for `withinMs` at most (and one statement), skipping rows another transaction holds
 * (the API's background removal, the sweep) instead of waiting for them; then 'members-remain',
 * nothing created, when some are left (the caller queues their removal and asks its client to come
 * back). The new topic never takes one of them: it is inserted only where none is left.
 */
export async function createTopicWithin(db: Kysely<HeraldTables>, app: string, name: string, options: TopicCreateOptions = {}): Promise<TopicCreation> {
  const withinMs = options.withinMs ?? DEFAULT_TOPIC_CREATE_REMOVAL_MS;
  const deadline = performance.now() + withinMs;
  const signal = AbortSignal.timeout(withinMs);
  for (;;) {
    await removeDeletedMembers(db, app, name, { batchSize: options.batchSize, signal, skipLocked: true });
    const made = await insertOrFind(db, app, name);
    // Rows another removal holds go with its statement: looked at again after a pause while time is left.
    if (made.kind !== 'members-remain' || performance.now() + RETRY_PAUSE_MS >= deadline) return made;
    await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
  }
}

/** The new topic, or the existing one; 'members-remain' (nothing inserted) when member rows of a deleted topic of that name remain. */
async function insertOrFind(db: Kysely<HeraldTables>, app: string, name: string): Promise<TopicCreation> {
  const inserted = await insertTopic(db, app, name);
  if (inserted === 'members-remain') return { kind: 'members-remain' };
  if (inserted !== undefined) return { kind: 'created', topic: toTopic(inserted) };
  const existing = await findTopic(db, app, name);
  if (existing === undefined) throw new Error(`topic ${app}/${name} vanished while it was created`);
  return { kind: 'existed', topic: existing };
}

/** Thrown inside insertTopic's transaction to undo its insert. */
class DeletedMembersRemain extends Error {}

/**
 * The new topic's row; undefined when it existed; 'members-remain' (nothing inserted) when member
 * rows of a deleted topic of that name remain. Checked once the row is inserted, before it commits:
 * meanwhile nobody can subscribe to the topic, delete it or create it, so none can be added after.
 */
async function insertTopic(db: Kysely<HeraldTables>, app: string, name: string): Promise<Selectable<TopicsTable> | undefined | 'members-remain'> {
  try {
    return await db.transaction().execute(async (tx) => {
      const row = await tx.insertInto('topics').values({ app, name }).onConflict((oc) => oc.doNothing()).returningAll().executeTakeFirst();
      if (row !== undefined && (await hasDeletedMembers(tx, app, name))) throw new DeletedMembersRemain();
      return row;
    });
  } catch (err) {
    if (err instanceof DeletedMembersRemain) return 'members-remain';
    throw err;
  }
}

export async function findTopic(db: Kysely<HeraldTables>, app: string, name: string): Promise<TopicRow | undefined> {
  const row = await db.selectFrom('topics').selectAll().where('app', '=', app).where('name', '=', name).executeTakeFirst();
  return row === undefined ? undefined : toTopic(row);
}

/** The app's topics by name, at most `limit`, after `after` (keyset). */
export async function listTopics(db: Kysely<HeraldTables>, app: string, limit: number, after?: string): Promise<TopicRow[]> {
  let q = db.selectFrom('topics').selectAll().where('app', '=', app);
  if (after !== undefined) q = q.where('name', '>', after);
  return (await q.orderBy('name').limit(limit).execute()).map(toTopic);
}

/**
 * Applies membership events in one statement. Last event wins: an event older than the member's
 * stored event_at changes nothing ('stale', later-event.ts); within a batch the newest per member wins. Events for
 * a topic the app does not have are 'unknown-topic' and change nothing; those stamped at or before
 * the latest deletion of a topic of that name are 'stale' (topic-deletion.ts), in the topic created
 * again too: a late subscribe from before the deletion does not bring its member back. A topic
 * never deleted takes events of any time (an import keeping its original times). Counts follow by trigger.
 * A new member, or one whose `subscribed` flips, records this transaction in changed_xid: a fan-out
 * running meanwhile reads the topic as it was when it started (audience-stream.ts).
 */
export async function applyTopicMemberships(db: Kysely<HeraldTables>, events: readonly TopicMemberEvent[]): Promise<TopicMemberResult[]> {
  const results: TopicMemberResult[] = events.map(() => 'stale');
  if (events.length === 0) return results;
  const keyed = events.map((e) => ({ e, m: memberOf(e), key: '' }));
  for (const k of keyed) k.key = JSON.stringify([k.e.app, k.e.topic, k.m.kind, k.m.id]);
  const best = new Map<string, number>();
  keyed.forEach((k, i) => {
    const j = best.get(k.key);
    if (j === undefined || Date.parse((keyed[j] as (typeof keyed)[number]).e.eventAt) <= Date.parse(k.e.eventAt)) best.set(k.key, i);
  });
  const winners = [...best.values()].map((i) => keyed[i] as (typeof keyed)[number]);
  const { rows } = await sql<{ app: string; topic: string; member_kind: string; member_id: string; applied: boolean }>`
    with i as (
      select * from unnest(
        ${winners.map((w) => w.e.app)}::text[], ${winners.map((w) => w.e.topic)}::text[], ${winners.map((w) => w.m.kind)}::text[],
        ${winners.map((w) => w.m.id)}::text[], ${winners.map((w) => w.e.subscribed)}::boolean[], ${winners.map((w) => w.e.eventAt)}::timestamptz[]
      ) as i(app, topic, member_kind, member_id, subscribed, event_at)
    ), locked as (
      -- The batch's topics, locked in one order before any member row is written: the count
      -- triggers lock them only after the upsert, those of changed members before those of new
      -- ones, and two batches locking each other's next topic deadlocked (40P01). A topic being
      -- deleted is waited for and then left out (unknown-topic): its row is gone when it commits.
      select t.app, t.name from topics t
      where (t.app, t.name) in (select app, topic from i)
      order by t.app, t.name
      for no key update
    ), known as (
      select i.* from i join locked t on t.app = i.app and t.name = i.topic
    ), fresh as (
      -- Not from before a deletion of the topic: a member of the deleted topic must not come back.
      select k.* from known k
      where not exists (select 1 from topic_deletions d where d.app = k.app and d.topic = k.topic and k.event_at <= d.deleted_at)
    ), up as (
      insert into topic_members as m (app, topic, member_kind, member_id, subscribed, event_at, changed_xid, event_applied_at)
      select app, topic, member_kind, member_id, subscribed, event_at, pg_current_xact_id(), now() from fresh
      order by app, topic, member_kind, member_id -- after the topics, one lock order for every batch: no deadlocks
      on conflict (app, topic, member_kind, member_id) do update set subscribed = excluded.subscribed, event_at = excluded.event_at,
        event_ahead_mark = ${aheadMarkSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`m.event_ahead_mark`)},
        event_applied_at = ${appliedAtSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`excluded.event_applied_at`)},
        changed_xid = case when m.subscribed = excluded.subscribed then m.changed_xid else excluded.changed_xid end
      where ${laterEventSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`m.event_ahead_mark`)}
      returning m.app, m.topic, m.member_kind, m.member_id
    )
    select k.app, k.topic, k.member_kind, k.member_id, (u.member_id is not null) as applied
    from known k left join up u using (app, topic, member_kind, member_id)`.execute(db);
  const outcome = new Map(rows.map((r) => [JSON.stringify([r.app, r.topic, r.member_kind, r.member_id]), r.applied ? 'applied' : 'stale'] as const));
  for (const i of best.values()) {
    const k = keyed[i] as (typeof keyed)[number];
    results[i] = outcome.get(k.key) ?? 'unknown-topic';
  }
  // Superseded events in the batch of an unknown topic are unknown too.
  keyed.forEach((k, i) => {
    const w = best.get(k.key);
    if (w !== undefined && results[w] === 'unknown-topic') results[i] = 'unknown-topic';
  });
  return results;
}
