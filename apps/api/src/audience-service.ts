import {
  FollowEvents,
  MAX_TOPIC_LIST,
  TopicCreate,
  TopicName,
  TopicNameCharacters,
  TopicQuery,
  TopicSubscriptions,
  type FollowEventsResult,
  type TopicList,
  type TopicSubscriptionsResult,
  type TopicView,
} from '@herald/contracts';
import type { ApiKeyRow, AudienceStore, TopicMemberRemovals, TopicRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';
import { requireKnownApp, type PreferenceServiceDeps } from './preference-service.ts';

export interface AudienceServiceDeps {
  apps: PreferenceServiceDeps['apps'];
  audiences: AudienceStore;
  now?: () => Date;
}

const topicView = (t: TopicRow): TopicView => ({ app: t.app, name: t.name, subscribers: t.subscribers, createdAt: t.createdAt.toISOString() });

/** The app named by the request, or the key's only app; 403/422 as for preferences. */
async function appOf(explicit: string | undefined, key: ApiKeyRow, deps: AudienceServiceDeps): Promise<string> {
  const only = key.apps.length === 1 && key.apps[0] !== '*' ? key.apps[0] : undefined;
  const app = explicit ?? only;
  if (app === undefined) throw new ApiError(400, 'invalid-request', 'app: required (this API key may act for more than one app)', [{ path: 'app', message: 'required' }]);
  await requireKnownApp(deps, key, app);
  return app;
}

/** The path's topic name by `schema`, or a 400 naming it. */
function topicName(raw: string, schema: typeof TopicName | typeof TopicNameCharacters = TopicName): string {
  const r = schema.safeParse(raw);
  if (!r.success) throw new ApiError(400, 'invalid-request', `name: ${r.error.issues[0]?.message ?? 'invalid'}`, [{ path: 'name', message: r.error.issues[0]?.message ?? 'invalid' }]);
  return r.data;
}

/**
 * The name of a topic to show or delete: any an existing topic may have, "." or ".." too (created
 * before such names were refused), for a client that sends it as it is (curl's /v1/topics/%2E%2E:
 * most clients collapse those segments, browsers and fetch even encoded; `herald topics` reaches them).
 */
const existingTopicName = (raw: string): string => topicName(raw, TopicNameCharacters);

const unknownTopic = (app: string, name: string) => new ApiError(404, 'unknown-topic', `unknown topic "${name}" of app "${app}"`, [{ path: 'name', message: 'no such topic' }]);

/** Seconds a client is asked to wait (Retry-After) before creating again a topic whose earlier memberships are still being removed. */
export const TOPIC_BEING_DELETED_RETRY_S = 5;

/** POST /v1/topics' answer: the topic, or a 409 to send with its Retry-After. */
export type TopicCreateAnswer = { kind: 'created' | 'existed'; topic: TopicView } | { kind: 'being-deleted'; refusal: ApiError; retryAfterS: number };

const topicBeingDeleted = (app: string, name: string): ApiError =>
  new ApiError(
    409,
    'topic-being-deleted',
    `topic "${name}" of app "${app}" was deleted and its earlier memberships are still being removed; try again in ${TOPIC_BEING_DELETED_RETRY_S} s`,
    [{ path: 'name', message: 'a topic of this name was deleted; its memberships are still being removed' }],
  );

/**
 * POST /v1/topics (idempotent: 'existed' with the existing topic). The memberships left of a topic of
 * that name deleted before are removed first, for a couple of seconds at most (libs/db
 * createTopicWithin; a topic of millions deleted moments ago takes minutes): while some remain the
 * topic is not created, their removal is queued in the background (`memberRemovals`), and the
 * client is answered 409 topic-being-deleted, to come back after TOPIC_BEING_DELETED_RETRY_S.
 */
export async function createTopic(
  body: unknown,
  key: ApiKeyRow,
  deps: AudienceServiceDeps & { memberRemovals: Pick<TopicMemberRemovals, 'add'> },
): Promise<TopicCreateAnswer> {
  const t = parseBody(TopicCreate, body);
  const app = await appOf(t.app, key, deps);
  const made = await deps.audiences.createTopic(app, t.name);
  if (made.kind !== 'members-remain') return { kind: made.kind, topic: topicView(made.topic) };
  deps.memberRemovals.add(app, t.name);
  return { kind: 'being-deleted', refusal: topicBeingDeleted(app, t.name), retryAfterS: TOPIC_BEING_DELETED_RETRY_S };
}

/**
 * DELETE /v1/topics/:name?app=: answered once the topic's row is gone and its deletion recorded
 * (libs/db topic-deletion.ts), 404 when there was no such topic. Its memberships are then removed
 * by `memberRemovals` in the background (a topic of millions takes minutes, past a client's
 * timeout), and by the registrars' sweep of what a stop cut short; meanwhile they are no membership.
 * Those a deletion cut short left are queued so too when there is no such topic.
 */
export async function deleteTopic(
  rawName: string,
  query: unknown,
  key: ApiKeyRow,
  deps: AudienceServiceDeps & { memberRemovals: Pick<TopicMemberRemovals, 'add'> },
): Promise<void> {
  const name = existingTopicName(rawName);
  const app = await appOf(parseBody(TopicQuery, query ?? {}).app, key, deps);
  const deleted = await deps.audiences.deleteTopic(app, name);
  deps.memberRemovals.add(app, name);
  if (!deleted) throw unknownTopic(app, name);
}

/** GET /v1/topics/:name?app= with its subscriber count. */
export async function getTopic(rawName: string, query: unknown, key: ApiKeyRow, deps: AudienceServiceDeps): Promise<TopicView> {
  const name = existingTopicName(rawName);
  const app = await appOf(parseBody(TopicQuery, query ?? {}).app, key, deps);
  const topic = await deps.audiences.findTopic(app, name);
  if (topic === undefined) throw unknownTopic(app, name);
  return topicView(topic);
}

/** GET /v1/topics?app=&after=: by name, MAX_TOPIC_LIST at a time. */
export async function listTopics(query: unknown, key: ApiKeyRow, deps: AudienceServiceDeps): Promise<TopicList> {
  const q = parseBody(TopicQuery, query ?? {});
  const app = await appOf(q.app, key, deps);
  const rows = await deps.audiences.listTopics(app, MAX_TOPIC_LIST + 1, q.after);
  return { topics: rows.slice(0, MAX_TOPIC_LIST).map(topicView), truncated: rows.length > MAX_TOPIC_LIST };
}

/** POST /v1/topics/:name/subscriptions: up to 1,000 users and devices join or leave; last event wins. */
export async function changeSubscriptions(rawName: string, body: unknown, key: ApiKeyRow, deps: AudienceServiceDeps): Promise<TopicSubscriptionsResult> {
  const name = topicName(rawName);
  const s = parseBody(TopicSubscriptions, body);
  const app = await appOf(s.app, key, deps);
  if ((await deps.audiences.findTopic(app, name)) === undefined) throw unknownTopic(app, name);
  const eventAt = s.eventAt ?? (deps.now?.() ?? new Date()).toISOString();
  const members = [...(s.users ?? []).map((userId) => ({ userId })), ...(s.devices ?? [])];
  const results = await deps.audiences.applyTopicMemberships(members.map((member) => ({ app, topic: name, member, subscribed: s.subscribed, eventAt })));
  if (results.includes('unknown-topic')) throw unknownTopic(app, name);
  const topic = await deps.audiences.findTopic(app, name);
  return { applied: results.filter((r) => r === 'applied').length, stale: results.filter((r) => r === 'stale').length, subscribers: topic?.subscribers ?? 0 };
}

/** POST /v1/follows: up to 1,000 follow/unfollow events; last event per edge wins. */
export async function applyFollows(body: unknown, key: ApiKeyRow, deps: AudienceServiceDeps): Promise<FollowEventsResult> {
  const f = parseBody(FollowEvents, body);
  const app = await appOf(f.app, key, deps);
  const results = await deps.audiences.applyFollowEvents(f.events.map((e) => ({ app, ...e })));
  return { applied: results.filter((r) => r === 'applied').length, stale: results.filter((r) => r === 'stale').length };
}
