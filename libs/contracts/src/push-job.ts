import { hash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import { z } from 'zod';
import { Instant } from './instant.ts';
import { DeliverAt, expiresAfterMs, parseIsoDuration } from './deliver-at.ts';
import { PushContent, effectivePushType, newContentIssues } from './push-content.ts';
import { CollapseKey } from './provider-override.ts';
import { JobAudience } from './job-audience.ts';
import { storable, unstorablePart } from './storable-text.ts';
import { CLOCK_SKEW_ALLOWANCE_MS } from './clock-skew.ts';

// Exported through this file, which the package's index exports whole.
export { CLOCK_SKEW_ALLOWANCE_MS } from './clock-skew.ts';

/** Longest job id (an API path parameter too: GET /v1/jobs/:id). */
export const MAX_JOB_ID_LENGTH = 200;
/** Longest app id (an API path parameter too: /admin/apps/:id). */
export const MAX_APP_ID_LENGTH = 64;

/** A job's id: what a PushJob's id must be, and a DevicePush's or a park's jobId (push_outcomes' key holds it). */
export const JobId = z
  .string()
  .min(1)
  .max(MAX_JOB_ID_LENGTH)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** Whether `id` could be a job's id (what a PushJob's id must be): one that cannot names no job. */
export const isJobId = (id: string): boolean => JobId.safeParse(id).success;

export const AppId = z
  .string()
  .min(1)
  .max(MAX_APP_ID_LENGTH)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be lower-case letters, digits, ".", "_" or "-"');

export const UserId = storable(z.string().min(1).max(200));

/** A job's opt-out category ("social", "marketing", ...). */
export const JobCategory = z.string().min(1).max(100);
/** A job's object ("thread:42"): a user who muted it gets no push about it. */
export const JobObjectId = z.string().min(1).max(200);

export const Priority = z.enum(['high', 'normal']);
export type Priority = z.infer<typeof Priority>;

/**
 * A push job as other teams publish it to `push.jobs`.
 * `id` is the idempotency key: publishing the same id twice delivers at most once per device.
 */
export const PushJob = z
  .strictObject({
    version: z.literal(1).default(1),
    id: JobId,
    app: AppId,
    userId: UserId.optional(),
    userIds: z.array(UserId).min(1).max(10_000).optional(),
    /**
     * Or an audience: a topic, the followers of a user, or the whole app (broadcast), optionally
     * narrowed by a segment filter; expanded in checkpointed chunks (job-audience.ts). Exactly one
     * of userId, userIds and audience.
     */
    audience: JobAudience.optional(),
    /** Opt-outs are by category ("social", "marketing", ...). */
    category: JobCategory,
    /** Mutes are by object ("thread:42"): a user who muted it gets no push about it. */
    objectId: JobObjectId.optional(),
    content: PushContent,
    /** Absolute expiry; a push still undelivered after it is dropped and counted. */
    expiresAt: Instant.optional(),
    /**
     * Relative expiry in seconds from acceptance; the earlier of this and expiresAt wins.
     * 0 means "now or never": sent only within a minute of acceptance (NOW_OR_NEVER_GRACE_S), and
     * the providers are told not to store it for an offline device (apns-expiration 0, "0s").
     */
    ttl: z.number().int().min(0).max(28 * 24 * 3600).optional(),
    priority: Priority.default('high'),
    /** APNs apns-collapse-id / FCM collapse_key: printable ASCII, at most 64 bytes. */
    collapseKey: CollapseKey.optional(),
    /** Deliver later: an instant, or a local time per device timezone (see deliver-at.ts). */
    deliverAt: DeliverAt.optional(),
    /** Log every step of this job at info level. */
    trace: z.boolean().optional(),
    /** When Herald accepted the job; set by the client library at publish time. */
    acceptedAt: Instant.optional(),
  })
  .refine((j) => [j.userId, j.userIds, j.audience].filter((t) => t !== undefined).length === 1, {
    message: 'give exactly one of userId, userIds or audience',
    path: ['userId'],
  })
  // Its users, category and object go to PostgreSQL as text, its content and audience (stored for
  // later) as jsonb. Said once: not again where a field's own check (UserId's) has said it.
  .superRefine((j, ctx) => {
    const at = ctx.issues.length === 0 ? unstorablePart(j) : undefined;
    if (at !== undefined) ctx.addIssue({ code: 'custom', path: at.path, message: at.message });
  });
export type PushJob = z.infer<typeof PushJob>;
export type PushJobInput = z.input<typeof PushJob>;

/**
 * The version of jobContentHash. Version 0 is the bare SHA-256 (32 bytes), as the API has kept since
 * 2026-12-03; a later version is 33 bytes, the version first. Raise it with any change to what the
 * digest reads (a field's default, a normalisation): the API and the demuxer compare a job's digest
 * with the one recorded for its id, and two of different versions are taken as unknown (the job's
 * id is not held against it), where a changed digest of the same version would park every job in
 * flight across the upgrade as job-id-reused. push-job.spec.ts pins one job's digest.
 */
export const JOB_DIGEST_VERSION = 0;

/**
 * A digest of what a job asks for: every field as validated (defaults filled in), but when it was
 * accepted and whether it is traced, with keys sorted, so a retry that repeats the job, in any key
 * order, has the same digest, and one that changes anything a user would get has another.
 * Of version 0 the SHA-256 alone; of a later one, its version byte and then the SHA-256.
 */
export function jobContentHash(job: PushJob, version: number = JOB_DIGEST_VERSION): Buffer {
  const asked: Partial<PushJob> = { ...job };
  delete asked.acceptedAt;
  delete asked.trace;
  const sha = hash('sha256', stringify(asked) ?? '', 'buffer');
  return version === 0 ? sha : Buffer.concat([Buffer.from([version]), sha]);
}

/** The users a user job names (an audience job names none: its members are read in chunks). */
export const targetUsers = (job: PushJob): string[] =>
  job.userIds !== undefined ? [...new Set(job.userIds)] : job.userId !== undefined ? [job.userId] : [];

/** How long Herald itself still sends a now-or-never push after accepting it. */
export const NOW_OR_NEVER_GRACE_S = 60;

/** What decides a job's expiry (isNowOrNever, jobExpiry). */
type JobExpiryFields = Pick<PushJob, 'ttl' | 'expiresAt' | 'content' | 'deliverAt'>;

/**
 * A push the providers must not store for an offline device: `ttl: 0`, and a VoIP push (by
 * `pushType` or the `apns-push-type` override) that gives no expiry of its own: no `ttl`, no
 * `expiresAt` and no `deliverAt.expiresAfter` (Herald's choice: a call that rings hours later is worse than none).
 */
export const isNowOrNever = (job: JobExpiryFields): boolean =>
  job.ttl === 0 ||
  (job.ttl === undefined && job.expiresAt === undefined && job.deliverAt?.expiresAfter === undefined && effectivePushType(job.content) === 'voip');

/**
 * The instant after which a push from this job must not be sent, or undefined for never. A
 * now-or-never push is sent only within NOW_OR_NEVER_GRACE_S of acceptance (a backlog or an
 * outage must not deliver it late) and is not stored by the providers.
 */
export function jobExpiry(job: JobExpiryFields, acceptedAt: Date): Date | undefined {
  const candidates: number[] = [];
  if (job.expiresAt !== undefined) candidates.push(Date.parse(job.expiresAt));
  if (job.ttl !== undefined && job.ttl > 0) candidates.push(acceptedAt.getTime() + job.ttl * 1000);
  if (isNowOrNever(job)) candidates.push(acceptedAt.getTime() + NOW_OR_NEVER_GRACE_S * 1000);
  return candidates.length === 0 ? undefined : new Date(Math.min(...candidates));
}

/**
 * When the job was accepted, as every door and the demuxer read it: its acceptedAt (stamped by the
 * producer's clock: the client library's, or a caller's at the API), but never later than `now`. A
 * clock running ahead would otherwise move a job for 09:00 (no date) accepted at 08:58 past 09:00,
 * to tomorrow, and its expiry later; a job without one was accepted now.
 */
export function acceptedAtOf(job: Pick<PushJob, 'acceptedAt'>, now: Date): Date {
  return job.acceptedAt === undefined ? now : new Date(Math.min(Date.parse(job.acceptedAt), now.getTime()));
}

/** The easternmost UTC offset (Kiribati, +14:00): a local date and time comes no earlier than this far ahead of UTC. */
const EASTERNMOST_OFFSET_MS = 14 * 3_600_000;
/** The westernmost UTC offset (−12:00): a local date and time comes no later than this far behind UTC. */
const WESTERNMOST_OFFSET_MS = -12 * 3_600_000;

/**
 * When a local time on a date falls, in epoch ms: first in the easternmost zone, last in the
 * westernmost, 26 hours apart (the jitter window's start; it is cut short before an expiry).
 */
export function localTimeBounds(d: { localTime: string; date: string }): { earliest: number; latest: number } {
  const asUtc = Date.parse(`${d.date}T${d.localTime}:00Z`);
  return { earliest: asUtc - EASTERNMOST_OFFSET_MS, latest: asUtc - WESTERNMOST_OFFSET_MS };
}

/**
 * Why every push of a job given deliverAt.expiresAfter has expired already when it is accepted: its
 * last due time (an instant; a local time on a date in the westernmost zone, its jitter window
 * included) plus expiresAfter has passed. A local time without a date is always ahead.
 */
function expiredAfterDue(d: DeliverAt, acceptedAt: Date): string | undefined {
  const afterMs = expiresAfterMs(d);
  if (afterMs === undefined) return undefined;
  const lastDue = 'at' in d ? Date.parse(d.at) : d.date === undefined ? undefined : localTimeBounds({ localTime: d.localTime, date: d.date }).latest + (d.jitter === undefined ? 0 : (parseIsoDuration(d.jitter) ?? 0));
  if (lastDue === undefined || lastDue + afterMs > acceptedAt.getTime()) return undefined;
  return `every push expires ${d.expiresAfter} after its due time, and the last due time (${new Date(lastDue).toISOString()}) is more than that before the job was accepted (${acceptedAt.toISOString()}), so nothing would be delivered`;
}

/**
 * Why a job has expired already when it is accepted (its expiresAt at or before acceptedAt by
 * CLOCK_SKEW_ALLOWANCE_MS or more: a wrong year or UTC offset), or undefined: every push of it would
 * be dropped as expired, nothing delivered, scheduled or not (a deliverAt in the past is due at
 * once). Only an expiresAt can have passed: a ttl, and now-or-never's minute, count from acceptance.
 * For the doors, which judge a job as of its acceptedAt, so a retry carrying it is judged as its
 * first copy was. The allowance: acceptedAt is the door's clock (the producer's host, an API host),
 * which may run ahead of the demuxer's, where acceptedAtOf caps it; an expiresAt another host set as
 * an absolute deadline, a minute or two ahead, is delivered there, so it is not refused here. Within
 * the allowance a job is taken, and its pushes recorded `expired` by the demuxer if it has passed
 * there too. Not for the demuxer: a job published over AMQP without acceptedAt is as of each time
 * the demuxer takes it, and one that expired while it waited in push.jobs is dropped as expired and
 * counted, not parked.
 */
export function expiredWhenAccepted(job: Pick<PushJob, 'expiresAt'>, acceptedAt: Date): { path: 'expiresAt'; message: string } | undefined {
  if (job.expiresAt === undefined || Date.parse(job.expiresAt) > acceptedAt.getTime() - CLOCK_SKEW_ALLOWANCE_MS) return undefined;
  return {
    path: 'expiresAt',
    message: `the job had expired when it was accepted (expires ${new Date(job.expiresAt).toISOString()}, accepted ${acceptedAt.toISOString()}: ${CLOCK_SKEW_ALLOWANCE_MS / 60_000} minutes or more before, further than clocks apart explain), so nothing would be delivered: check its date and UTC offset`,
  };
}

/**
 * Why a scheduled job would expire before any of its pushes falls due (so nothing at all would be
 * delivered), naming the field that sets the expiry (or, for a now-or-never VoIP job, the one that
 * would: deliverAt.expiresAfter), or undefined. Its ttl counts from acceptance,
 * not from deliverAt: a job for tomorrow with `ttl: 3600` (or `ttl: 0`) would be accepted and then
 * deliver nothing. Decided for an instant, and for a local time on a given date (earliest in the
 * easternmost zone); a local time without a date depends on each device's zone and is not judged.
 * Only the jitter window's start counts: a window running past the expiry is cut short to end a little before it
 * (libs/scheduling), so a start before the expiry delivers.
 */
export function expiresBeforeDue(job: PushJob, acceptedAt: Date): { path: 'ttl' | 'expiresAt' | 'deliverAt.expiresAfter'; message: string } | undefined {
  const d = job.deliverAt;
  if (d === undefined) return undefined;
  const lateBy = expiredAfterDue(d, acceptedAt);
  if (lateBy !== undefined) return { path: 'deliverAt.expiresAfter', message: lateBy };
  const earliest = 'at' in d ? Date.parse(d.at) : d.date === undefined ? undefined : localTimeBounds({ localTime: d.localTime, date: d.date }).earliest;
  const expiry = jobExpiry(job, acceptedAt);
  if (earliest === undefined || expiry === undefined || expiry.getTime() > earliest) return undefined;
  const due = 'at' in d ? d.at : `${d.date} ${d.localTime} local time`;
  const { path, fix } = earlyExpiryFix(job, expiry);
  return { path, message: `the job expires at ${expiry.toISOString()}, before it is due (${due}), so nothing would be delivered: ${fix}` };
}

/**
 * The field that sets a scheduled job's expiry before it is due, and what to give instead. A VoIP
 * job with no expiry of its own has no ttl to lengthen: it is now-or-never (isNowOrNever), and what
 * lets it wait for its due time is deliverAt.expiresAfter.
 */
function earlyExpiryFix(job: PushJob, expiry: Date): { path: 'ttl' | 'expiresAt' | 'deliverAt.expiresAfter'; fix: string } {
  if (job.expiresAt !== undefined && Date.parse(job.expiresAt) === expiry.getTime()) return { path: 'expiresAt', fix: 'give an expiresAt after deliverAt' };
  if (isNowOrNever(job) && job.ttl === undefined) {
    return {
      path: 'deliverAt.expiresAfter',
      fix: `a VoIP push without an expiry of its own is now-or-never (sent within ${NOW_OR_NEVER_GRACE_S} s of acceptance or not at all, as a call that rings hours later is worse than none), so give deliverAt.expiresAfter, how long after it is due it may still ring (e.g. "PT5M")`,
    };
  }
  return { path: 'ttl', fix: 'ttl counts from acceptance, so give one longer than the wait (or an expiresAt after deliverAt)' };
}

/** newContentIssues of a job, paths from the job ("content.data.collapse_key"): what its doors refuse of a new job. */
export function newJobIssues(job: Pick<PushJob, 'content'>): { path: string; message: string }[] {
  return newContentIssues(job.content).map((issue) => ({ path: `content.${issue.path}`, message: issue.message }));
}
