import { z } from 'zod';
import { Instant } from './instant.ts';
import { AppId, PushJob } from './push-job.ts';
import { checkDeviceToken, deviceTokenProblems, registerProblems, RegisterShape, UnregisterShape } from './registration.ts';
import { PushSubscriptionJson, subscriptionFields } from './web-subscription.ts';
import { PlatformSchema } from './device-push.ts';

/** Most jobs one POST /v1/jobs:batch may carry. */
export const MAX_BATCH_JOBS = 1000;

/** POST /v1/jobs:batch — every job is a PushJob; the batch is accepted or rejected as a whole. */
export const JobBatch = z.strictObject({ jobs: z.array(PushJob).min(1).max(MAX_BATCH_JOBS) });
export type JobBatch = z.infer<typeof JobBatch>;

const OptionalEventAt = Instant.optional().describe('event time; default: when the API received it');

const DeviceRegisterFields = z
  .strictObject({
    ...RegisterShape,
    /** The device token; for web, the subscription's endpoint (or give `subscription` instead of token and keys). */
    token: RegisterShape.token.optional(),
    /** Web Push: the browser's `PushSubscription.toJSON()` as is, instead of token (its endpoint) and keys. */
    subscription: PushSubscriptionJson.optional(),
    eventAt: OptionalEventAt,
  })
  .omit({ kind: true, version: true });

/** A subscription's problems are reported on its own fields: subscription.endpoint, subscription.keys. */
const SUBSCRIPTION_PATHS: Record<string, string[]> = { token: ['subscription', 'endpoint'], keys: ['subscription', 'keys'] };

function checkDeviceRegister(d: z.infer<typeof DeviceRegisterFields>, ctx: z.RefinementCtx): void {
  const add = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (d.subscription === undefined) {
    if (d.token === undefined) return add(['token'], d.platform === 'web' ? 'give token (the endpoint) and keys, or subscription' : 'a device token is required');
    return registerProblems({ ...d, token: d.token }).forEach((p) => add(p.path, p.message));
  }
  if (d.platform !== 'web') return add(['subscription'], 'subscription is a Web Push subscription: give platform "web"');
  if (d.token !== undefined || d.keys !== undefined) return add(['subscription'], 'give either subscription or token and keys, not both');
  registerProblems({ ...d, ...subscriptionFields(d.subscription) }).forEach((p) => add(SUBSCRIPTION_PATHS[p.path[0] ?? ''] ?? p.path, p.message));
}

/**
 * POST /v1/devices — a Registration "register" event; kind and version are implied, eventAt defaults
 * to now. A browser subscription may come as `subscription` (PushSubscription.toJSON()); the
 * result is always the canonical fields (token = endpoint, keys).
 */
export const DeviceRegister = DeviceRegisterFields.superRefine(checkDeviceRegister).transform(({ subscription, token, ...rest }) => ({
  ...rest,
  ...(subscription !== undefined ? subscriptionFields(subscription) : { token: token as string }),
}));
export type DeviceRegister = z.infer<typeof DeviceRegister>;

const DeviceUnregisterFields = z
  .strictObject({
    ...UnregisterShape,
    token: UnregisterShape.token.optional(),
    /** Web Push: the browser's `PushSubscription.toJSON()` as is (as POST takes it), instead of token (its endpoint). */
    subscription: PushSubscriptionJson.optional(),
    eventAt: OptionalEventAt,
  })
  .omit({ kind: true, version: true });

function checkDeviceUnregister(d: z.infer<typeof DeviceUnregisterFields>, ctx: z.RefinementCtx): void {
  const add = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (d.subscription === undefined) {
    if (d.token === undefined) return add(['token'], d.platform === 'web' ? 'give token (the endpoint) or subscription' : 'a device token is required');
    return checkDeviceToken({ ...d, token: d.token }, ctx);
  }
  if (d.platform !== 'web') return add(['subscription'], 'subscription is a Web Push subscription: give platform "web"');
  if (d.token !== undefined) return add(['subscription'], 'give either subscription or token, not both');
  deviceTokenProblems({ ...d, token: d.subscription.endpoint }).forEach((p) => add(SUBSCRIPTION_PATHS[p.path[0] ?? ''] ?? p.path, p.message));
}

/**
 * DELETE /v1/devices — a Registration "unregister" event. A browser's subscription may come as
 * `subscription` (PushSubscription.toJSON(), as POST takes it); the result carries its endpoint as token.
 */
export const DeviceUnregister = DeviceUnregisterFields.superRefine(checkDeviceUnregister).transform(({ subscription, token, ...rest }) => ({
  ...rest,
  token: subscription?.endpoint ?? (token as string),
}));
export type DeviceUnregister = z.infer<typeof DeviceUnregister>;

export const JobAccepted = z.object({
  id: z.string(),
  /** true when this job id was accepted before: nothing was published this time. */
  duplicate: z.boolean(),
  /** Where Herald adapted the job to a provider's limits (e.g. an expiry beyond FCM's 28 days). */
  notices: z.array(z.string()).optional(),
});
export type JobAccepted = z.infer<typeof JobAccepted>;

export const JobBatchAccepted = z.object({ results: z.array(JobAccepted) });

const count = z.number().int().min(0);

/**
 * A job's status. Its counts add up at every moment:
 * targeted = delivered + invalid + failed + parked + (skipped.optedOut + skipped.muted +
 * skipped.noDevice + skipped.expired + skipped.cancelled) + inFlight.
 */
export const JobStatus = z.object({
  id: z.string(),
  app: z.string(),
  acceptedAt: z.string(),
  /** RabbitMQ confirmed the job. */
  published: z.boolean(),
  /** The demuxer's result: fanned-out, no-devices, skipped (every device skipped for opt-outs or mutes), expired, or parked: <code>; null until it has seen the job. */
  demuxOutcome: z.string().nullable(),
  /**
   * Every device push the job addressed (scheduled and skipped ones included) plus one for each
   * target user without a device; null until the demuxer has seen the job, 0 when it parked it.
   */
  targeted: count.nullable(),
  delivered: count,
  /** The device's token is dead (the provider said so, or it was invalidated while the push was queued). */
  invalid: count,
  /** The same as skipped.expired (kept for existing clients). */
  expired: count,
  /** Device pushes Herald stopped trying (the sum of parkedBy); a replay by an operator sends them again. */
  parked: count,
  /** Parked device pushes per park code: retries-exhausted, delivery-limit, app-disabled, app-banned, ... */
  parkedBy: z.record(z.string(), count),
  /** The provider refused these device pushes for good (parked with code provider-rejected; see the pushes' reasons). */
  failed: count,
  /** Not sent, by why: the user opted out of the category, muted the object, has no device; expired before it could be sent; cancelled while scheduled. */
  skipped: z.object({ optedOut: count, muted: count, noDevice: count, expired: count, cancelled: count }),
  /** targeted minus every outcome above: queued, being sent, waiting for a retry, or scheduled; null while targeted is. */
  inFlight: count.nullable(),
  /** Device pushes still waiting for their deliverAt (part of inFlight). */
  scheduled: count,
  /** The job itself was parked by the demuxer (demuxOutcome "parked: <code>"), and why; null otherwise. */
  jobParked: z.object({ code: z.string(), reason: z.string().nullable() }).nullable(),
  /** Where Herald adapted the job to a provider's limits, e.g. an expiry capped at FCM's 28 days. */
  notices: z.array(z.string()),
  /**
   * expanding: its audience is still being read (or the demuxer has not seen it yet); sending:
   * every push is made, some are in flight; done: nothing in flight; cancelling: cancelled
   * (DELETE /v1/jobs/:id) with pushes still in flight, which the pushers drop (or a provider already
   * has); cancelled: cancelled, nothing in flight.
   */
  state: z.enum(['expanding', 'sending', 'done', 'cancelling', 'cancelled']).optional(),
  /** An audience job's fan-out (ADR 0013); null for a job that names its users. */
  audience: z
    .object({
      /** The audience as the job gave it (topic, followersOf, broadcast, segment, ...). */
      target: z.record(z.string(), z.unknown()),
      /**
       * The audience's size when the fan-out started. A broadcast's is its devices, its segment
       * applied (sizeExact). A topic's or followers' is their members (users, and a topic's single
       * devices), before any segment (sizeExact false): a user with two phones is one, a segment
       * may leave most out, so `expanded` (devices) can end above or below it.
       */
      size: count.nullable(),
      sizeExact: z.boolean(),
      /** Devices read so far (skipped ones included); for a broadcast, equals size once every chunk is read, unless the audience changed meanwhile. */
      expanded: count,
      chunks: count,
      chunksDone: count,
    })
    .nullable()
    .optional(),
});
export type JobStatus = z.infer<typeof JobStatus>;

/** What became of one device push (GET /v1/jobs/:id/pushes); pushes on their way to a provider are not listed yet, but for one replayed from its parked queue (outcome `replayed`). */
/** `replayed`: sent back from its parked queue by an operator, in flight again until its new outcome (counted in `inFlight`). */
export const JobPushOutcome = z.enum(['delivered', 'invalid', 'failed', 'parked', 'expired', 'cancelled', 'opted-out', 'muted', 'scheduled', 'replayed']);

export const JobPush = z.object({
  pushId: z.string(),
  platform: PlatformSchema.nullable(),
  deviceId: z.string().nullable(),
  /** The device's token, masked as in Herald's logs (… and its last six characters); null when the device is unknown. */
  token: z.string().nullable(),
  outcome: JobPushOutcome,
  /** The park code (parked, failed), or the provider's reason for a dead token (invalid). */
  code: z.string().nullable(),
  /** Why, in a sentence: the provider's answer, the park reason. */
  reason: z.string().nullable(),
  /** apns-id or FCM message name of a delivered push. */
  providerMessageId: z.string().nullable(),
  /** When a scheduled push is due. */
  dueAt: z.string().nullable(),
  updatedAt: z.string(),
});
export type JobPush = z.infer<typeof JobPush>;

export const MAX_JOB_PUSHES_PAGE = 1000;
/** The page GET /v1/jobs/:id/pushes (and `herald job pushes`) lists without a limit. */
export const DEFAULT_JOB_PUSHES_PAGE = 100;

/** GET /v1/jobs/:id/pushes?limit=&after= — keyset paging in pushId order. */
export const JobPushesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_JOB_PUSHES_PAGE).default(DEFAULT_JOB_PUSHES_PAGE),
  /** The `next` of the previous page. */
  after: z.uuid().optional(),
});

export const JobPushList = z.object({
  pushes: z.array(JobPush),
  /** Pass as `after` for the next page; null on the last page. */
  next: z.string().nullable(),
});
export type JobPushList = z.infer<typeof JobPushList>;

export const JobCancelled = z.object({ id: z.string(), cancelled: z.number().int() });

export const ApiKeyCreate = z.strictObject({
  team: z.string().min(1).max(100),
  /** App ids the key may act for (apps that exist); "*" for every app. */
  apps: z.array(z.union([z.literal('*'), AppId])).min(1),
});

export const ApiKeyCreated = z.object({ id: z.string(), key: z.string(), team: z.string(), apps: z.array(z.string()) });

/**
 * Every error's body: a stable code, a sentence, and for validation errors each failing field's
 * path. The OpenAPI document calls it ApiError; not named so here, as the API's ApiError class
 * would clash with it in a service's bundle and be renamed (infra/local/build-services.ts).
 */
export const ApiErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});
export type ApiErrorBody = z.infer<typeof ApiErrorBody>;
