import { z } from 'zod';
import { Instant } from './instant.ts';
import { PlatformSchema as Platform } from './device-push.ts';
import { deviceTokenProblem } from './device-token.ts';
import { AppId, UserId } from './push-job.ts';

/**
 * Topics and their members (issue 20). A topic belongs to one app; its members are users (every
 * active device of the user) or single devices (platform + token). Membership events carry the
 * caller's time and the last event wins, like device registrations: a late "subscribe" cannot undo
 * a newer "unsubscribe".
 */

/** Longest topic name (an API path parameter too: /v1/topics/:name). */
export const MAX_TOPIC_NAME_LENGTH = 200;

/**
 * The characters and length of a topic name (TopicName without its refusal of dots only): any
 * name an existing topic may have, one of dots only created before those were refused too, so an
 * operator can still show, list past and delete it.
 */
export const TopicNameCharacters = z
  .string()
  .regex(
    new RegExp(`^[A-Za-z0-9_.~-]{1,${MAX_TOPIC_NAME_LENGTH}}$`),
    `must be 1 to ${MAX_TOPIC_NAME_LENGTH} letters, digits, "-", "_", "." or "~"`,
  );

/**
 * URL-safe, like FCM topic names: letters, digits, `-`, `_`, `.`, `~`; 1 to MAX_TOPIC_NAME_LENGTH
 * characters, not dots only: HTTP clients collapse the path segments "." and ".." (RFC 3986 §5.2.4),
 * so /v1/topics/.. never reached such a topic, and a name of dots only says nothing anyway.
 */
export const TopicName = TopicNameCharacters.refine((s) => !/^\.+$/.test(s), 'must not be dots only ("." and ".." cannot be reached by URL)');

const EventAt = Instant;

/** A single device as its app knows it; the token is checked for its platform. */
export const TopicDevice = z
  .strictObject({ platform: Platform, token: z.string().min(1).max(4096) })
  .superRefine((d, ctx) => {
    const problem = deviceTokenProblem(d.platform, d.token);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['token'], message: problem });
  });
export type TopicDevice = z.infer<typeof TopicDevice>;

/** Most members one subscribe request (HTTP) may carry, users and devices together. */
export const MAX_TOPIC_BATCH = 1000;

/** `push.registrations` message: one member joins or leaves a topic. Exactly one of userId, device. */
export const TopicMembership = z
  .strictObject({
    version: z.literal(1).default(1),
    kind: z.literal('topic-membership'),
    app: AppId,
    topic: TopicName,
    userId: UserId.optional(),
    device: TopicDevice.optional(),
    subscribed: z.boolean(),
    eventAt: EventAt,
  })
  .superRefine((m, ctx) => {
    if ((m.userId === undefined) === (m.device === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['userId'], message: 'exactly one of userId and device is required' });
    }
  });
export type TopicMembership = z.infer<typeof TopicMembership>;
export type TopicMembershipInput = z.input<typeof TopicMembership>;

/** POST /v1/topics. `app` may be left out when the API key has exactly one app. */
export const TopicCreate = z.strictObject({ app: AppId.optional(), name: TopicName });
export type TopicCreate = z.infer<typeof TopicCreate>;

/** POST /v1/topics/:name/subscriptions: up to MAX_TOPIC_BATCH members at once, one event time. */
export const TopicSubscriptions = z
  .strictObject({
    app: AppId.optional(),
    subscribed: z.boolean(),
    eventAt: EventAt.optional().describe('event time; default: when the API received it'),
    users: z.array(UserId).max(MAX_TOPIC_BATCH, `at most ${MAX_TOPIC_BATCH} members per request`).optional(),
    devices: z.array(TopicDevice).max(MAX_TOPIC_BATCH, `at most ${MAX_TOPIC_BATCH} members per request`).optional(),
  })
  .superRefine((s, ctx) => {
    const n = (s.users?.length ?? 0) + (s.devices?.length ?? 0);
    if (n === 0) ctx.addIssue({ code: 'custom', path: ['users'], message: 'name at least one member in users or devices' });
    if (n > MAX_TOPIC_BATCH) ctx.addIssue({ code: 'custom', path: ['devices'], message: `at most ${MAX_TOPIC_BATCH} members per request (users and devices together), this one has ${n}` });
  });
export type TopicSubscriptions = z.infer<typeof TopicSubscriptions>;

export const TopicView = z.object({ app: z.string(), name: z.string(), subscribers: z.number(), createdAt: z.string() });
export type TopicView = z.infer<typeof TopicView>;
export const TopicList = z.object({ topics: z.array(TopicView), truncated: z.boolean() });
export type TopicList = z.infer<typeof TopicList>;
/** What a subscribe request changed: applied (newer than the member's last event) or stale (ignored). */
export const TopicSubscriptionsResult = z.object({ applied: z.number(), stale: z.number(), subscribers: z.number() });
export type TopicSubscriptionsResult = z.infer<typeof TopicSubscriptionsResult>;

/** The query of GET /v1/topics (and `?app=` of the other topic routes). */
export const TopicQuery = z.strictObject({
  app: AppId.optional().describe('the app; may be left out when the API key has exactly one app'),
  // Any name the listing may end a page on, a dots-only one from before they were refused too.
  after: TopicNameCharacters.optional().describe('list the topics after this name (the last one of the previous page)'),
});
export type TopicQuery = z.infer<typeof TopicQuery>;
/** Most topics one GET /v1/topics answers with; `truncated` says there are more (page with `after`). */
export const MAX_TOPIC_LIST = 1000;
