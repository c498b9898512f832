import { z } from 'zod';
import { Instant } from './instant.ts';
import { AppId, UserId } from './push-job.ts';

/**
 * "follower follows followee" edges (issue 20, Flickr's contacts). The last event per edge wins,
 * like device registrations: a late "follow" cannot undo a newer "unfollow".
 */
const FollowFields = {
  follower: UserId,
  followee: UserId,
  following: z.boolean(),
  eventAt: Instant,
};

const notSelf = (e: { follower: string; followee: string }, ctx: z.RefinementCtx): void => {
  if (e.follower === e.followee) ctx.addIssue({ code: 'custom', path: ['followee'], message: 'a user cannot follow themselves' });
};

/** `push.registrations` message: one follow or unfollow. */
export const FollowEvent = z
  .strictObject({ version: z.literal(1).default(1), kind: z.literal('follow'), app: AppId, ...FollowFields })
  .superRefine(notSelf);
export type FollowEvent = z.infer<typeof FollowEvent>;
export type FollowEventInput = z.input<typeof FollowEvent>;

/** Most events one POST /v1/follows may carry. */
export const MAX_FOLLOW_BATCH = 1000;

/** POST /v1/follows. `app` may be left out when the API key has exactly one app. */
export const FollowEvents = z.strictObject({
  app: AppId.optional(),
  events: z
    .array(z.strictObject(FollowFields).superRefine(notSelf))
    .min(1)
    .max(MAX_FOLLOW_BATCH, `at most ${MAX_FOLLOW_BATCH} events per request`),
});
export type FollowEvents = z.infer<typeof FollowEvents>;

export const FollowEventsResult = z.object({ applied: z.number(), stale: z.number() });
export type FollowEventsResult = z.infer<typeof FollowEventsResult>;
