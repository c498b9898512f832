import { FollowEvents, FollowEventsResult, TopicCreate, TopicList, TopicQuery, TopicSubscriptions, TopicSubscriptionsResult, TopicView } from '@herald/contracts';
import { z } from 'zod';

/** The topic and follow routes' part of the OpenAPI document (issue 20; merged in openapi.ts). */
export const AUDIENCE_SCHEMAS = { TopicCreate, TopicView, TopicList, TopicSubscriptions, TopicSubscriptionsResult, FollowEvents, FollowEventsResult };
export const AUDIENCE_INPUTS: ReadonlySet<string> = new Set(['TopicCreate', 'TopicSubscriptions', 'FollowEvents']);

type Name = keyof typeof AUDIENCE_SCHEMAS;
const ref = (name: Name | 'ApiError') => ({ $ref: `#/components/schemas/${name}` });
const body = (name: Name) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const answer = (description: string, name: Name) => ({ description, content: { 'application/json': { schema: ref(name) } } });
const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: 'error (see error.code, error.message and error.issues)', content: { 'application/json': { schema: ref('ApiError') } } }]));
const team = [{ apiKey: [] }];

const queryParams = (schema: z.ZodObject, only?: readonly string[]) =>
  Object.entries(schema.shape)
    .filter(([name]) => only === undefined || only.includes(name))
    .map(([name, field]) => {
      const json = z.toJSONSchema(field as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
      delete json['$schema'];
      return { name, in: 'query', required: false, schema: json };
    });
const nameParam = { name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_.~-]{1,200}$' } };
const appParam = queryParams(TopicQuery, ['app']);

export const AUDIENCE_PATHS = {
  '/v1/topics': {
    post: {
      summary:
        'Create a topic of an app (idempotent). The memberships left of a topic of that name deleted before are removed first, for a couple of seconds at most: while some remain (a topic of millions deleted moments ago) it is not created, 409 topic-being-deleted with Retry-After, their removal going on in the background',
      security: team,
      requestBody: body('TopicCreate'),
      responses: {
        '201': answer('created', 'TopicView'),
        '200': answer('it existed', 'TopicView'),
        ...errors(400, 401, 403, 413, 415, 422, 503),
        '409': {
          description: 'topic-being-deleted: the memberships of a topic of that name deleted before are still being removed; try again after Retry-After',
          headers: { 'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer' } } },
          content: { 'application/json': { schema: ref('ApiError') } },
        },
      },
    },
    get: { summary: "The app's topics by name with their subscriber counts", security: team, parameters: queryParams(TopicQuery), responses: { '200': answer('topics', 'TopicList'), ...errors(400, 401, 403, 422, 503) } },
  },
  '/v1/topics/{name}': {
    get: { summary: 'A topic and its subscriber count (members: users and single devices)', security: team, parameters: [nameParam, ...appParam], responses: { '200': answer('the topic', 'TopicView'), ...errors(400, 401, 403, 404, 422, 503) } },
    delete: {
      summary: 'Delete a topic; its memberships are removed after the answer, in the background (none of them is a membership from the deletion on)',
      security: team,
      parameters: [nameParam, ...appParam],
      responses: { '204': { description: 'the topic is gone and its deletion recorded; its memberships are being removed' }, ...errors(400, 401, 403, 404, 422, 503) },
    },
  },
  '/v1/topics/{name}/subscriptions': {
    post: {
      summary: 'Subscribe or unsubscribe up to 1,000 users and devices; the last event per member wins (an older event is counted as stale and changes nothing)',
      security: team,
      parameters: [nameParam],
      requestBody: body('TopicSubscriptions'),
      responses: { '200': answer('applied and stale events, and the new count', 'TopicSubscriptionsResult'), ...errors(400, 401, 403, 404, 413, 415, 422, 503) },
    },
  },
  '/v1/follows': {
    post: {
      summary: 'Up to 1,000 follow/unfollow events ("follower follows followee"); the last event per edge wins',
      security: team,
      requestBody: body('FollowEvents'),
      responses: { '200': answer('applied and stale events', 'FollowEventsResult'), ...errors(400, 401, 403, 413, 415, 422, 503) },
    },
  },
};
