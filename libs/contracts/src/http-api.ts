import { z } from 'zod';
import { PushJob } from './push-job.ts';
import { checkDeviceToken, RegisterShape, UnregisterShape } from './registration.ts';

/** Most jobs one POST /v1/jobs:batch may carry. */
export const MAX_BATCH_JOBS = 1000;

/** POST /v1/jobs:batch — every job is a PushJob; the batch is accepted or rejected as a whole. */
export const JobBatch = z.strictObject({ jobs: z.array(PushJob).min(1).max(MAX_BATCH_JOBS) });
export type JobBatch = z.infer<typeof JobBatch>;

const OptionalEventAt = z.iso.datetime({ offset: true }).optional().describe('event time; default: when the API received it');

/** POST /v1/devices — a Registration "register" event; kind and version are implied, eventAt defaults to now. */
export const DeviceRegister = z
  .strictObject({ ...RegisterShape, eventAt: OptionalEventAt })
  .omit({ kind: true, version: true })
  .superRefine(checkDeviceToken);
export type DeviceRegister = z.infer<typeof DeviceRegister>;

/** DELETE /v1/devices — a Registration "unregister" event. */
export const DeviceUnregister = z
  .strictObject({ ...UnregisterShape, eventAt: OptionalEventAt })
  .omit({ kind: true, version: true })
  .superRefine(checkDeviceToken);
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

export const JobStatus = z.object({
  id: z.string(),
  app: z.string(),
  acceptedAt: z.string(),
  /** RabbitMQ confirmed the job. */
  published: z.boolean(),
  /** The demuxer's result: fanned-out, no-devices, or parked: <code>; null until it has seen the job. */
  demuxOutcome: z.string().nullable(),
  /** Device pushes the job fanned out to (including scheduled ones); null until the demuxer has seen it. */
  targeted: z.number().int().nullable(),
  delivered: z.number().int(),
  invalid: z.number().int(),
  expired: z.number().int(),
  parked: z.number().int(),
  /** Device pushes still waiting for their deliverAt. */
  scheduled: z.number().int(),
  /** Where Herald adapted the job to a provider's limits, e.g. an expiry capped at FCM's 28 days. */
  notices: z.array(z.string()),
});
export type JobStatus = z.infer<typeof JobStatus>;

export const JobCancelled = z.object({ id: z.string(), cancelled: z.number().int() });

export const ApiKeyCreate = z.strictObject({
  team: z.string().min(1).max(100),
  /** App ids the key may act for; "*" for every app. */
  apps: z.array(z.string().min(1).max(64)).min(1),
});

export const ApiKeyCreated = z.object({ id: z.string(), key: z.string(), team: z.string(), apps: z.array(z.string()) });

/** Every error: a stable code, a sentence, and for validation errors each failing field's path. */
export const ApiError = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});
export type ApiError = z.infer<typeof ApiError>;
