import { hash } from 'node:crypto';
import { z } from 'zod';
import { Instant } from './instant.ts';
import { AppId, JobCategory, JobId, JobObjectId, Priority, UserId } from './push-job.ts';
import { PushContent } from './push-content.ts';
import { CollapseKey } from './provider-override.ts';
import { deviceTokenProblem } from './device-token.ts';
import { Platforms } from './names.ts';
import { WebPushKeyShape } from './web-push.ts';
import { storable } from './storable-text.ts';

export const PlatformSchema = z.enum(Platforms);

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Text PostgreSQL reads as a uuid (any version: checking a push id read leniently, not validating one). */
export const isUuidText = (text: string): boolean => UUID_TEXT.test(text);

/** One push to one device, as the Demuxer emits it to `push.<platform>.send`. */
export const DevicePush = z
  .strictObject({
  version: z.literal(1).default(1),
  /** Deterministic from job id + device id: the delivery-ledger key and the APNs apns-id. */
  pushId: z.uuid(),
  /**
   * As the job's id (at most 200 printable ASCII characters): it goes to PostgreSQL with the push's
   * job-status outcome, in push_outcomes' key. A longer one was sent, then refused by the key's
   * index, and the pusher's completion retried until shutdown, every later batch waiting behind it.
   */
  jobId: JobId,
  // deviceId goes to PostgreSQL with the push's job-status outcome (storable-text.ts).
  /** The id of the device's devices row: the pusher finds the device by it (is it dead now?), and its token must match. */
  deviceId: storable(z.string().min(1)),
  app: AppId,
  platform: PlatformSchema,
  token: z.string().min(1).max(4096),
  /** Web Push only: the subscription's keys (the token is its endpoint). */
  webKeys: WebPushKeyShape.optional(),
  /** Web Push only: the VAPID public key the subscription was made with, when its registration said so (the pusher signs with that pair). */
  webVapidKey: z.string().min(1).max(200).optional(),
  userId: UserId,
  /**
   * Addressed to the device itself (a broadcast or segment, a topic's device member), not to
   * `userId`: sent even if the device is registered to another user by then. Without it a push is
   * its user's, and a pusher drops it when the device has gone to another user (a shared tablet).
   */
  toDevice: z.literal(true).optional(),
  /**
   * The job's category and object. A pusher asks the user's opt-outs and mutes again of a push that
   * waited (replayed from a parked queue, held back by its app's budget or a pause, retried): the
   * demuxer asked them when it made the push (`askedAt`), maybe hours before. Pushers built before
   * them park such a push as `schema`: upgrade them first (docs/deployment.md).
   */
  category: storable(JobCategory).optional(),
  objectId: storable(JobObjectId).optional(),
  /**
   * When the demuxer read the user's opt-outs and mutes for this push (an audience's chunk, or a job
   * taken from a backlog, long after acceptedAt). A scheduled push's were read again when it fell due.
   */
  askedAt: Instant.optional(),
  content: PushContent,
  priority: Priority,
  collapseKey: CollapseKey.optional(),
  expiresAt: Instant.optional(),
  /** The job's ttl was 0: the providers must not store it for an offline device. */
  nowOrNever: z.literal(true).optional(),
  acceptedAt: Instant,
  /**
   * A scheduled push: when it fell due, if after acceptedAt. The pushers count its end-to-end
   * latency from it, and a Live Activity update goes stamped with it (not with the acceptance,
   * hours before, which iOS takes as older than any update sent since). Pushers built before it
   * park such a push as `schema`: upgrade them first (docs/deployment.md).
   */
  dueAt: Instant.optional(),
  trace: z.boolean().optional(),
  })
  // The pushers' last line of defence: a token no provider could accept is parked, never sent.
  .superRefine((p, ctx) => {
    const problem = deviceTokenProblem(p.platform, p.token);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['token'], message: problem });
    if ((p.platform === 'web') !== (p.webKeys !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['webKeys'], message: 'a web push carries its subscription keys; an APNs or FCM push has none' });
    }
  });
export type DevicePush = z.infer<typeof DevicePush>;

/** What a push is as of: when it fell due (a scheduled push), else when its job was accepted. */
export const pushAsOf = (push: Pick<DevicePush, 'acceptedAt' | 'dueAt'>): Date => new Date(push.dueAt ?? push.acceptedAt);

/**
 * A UUID-shaped id derived from (job id, device id). The same job replayed gives the same
 * pushId, so the ledger (and APNs, through apns-id) can recognise a duplicate.
 */
export function derivePushId(jobId: string, deviceId: string): string {
  // One-shot crypto.hash: the same digest as a Hash object fed the three parts, in 0.6 µs against
  // 1.5 (once per device push in the demuxer).
  const h = hash('sha256', `${jobId}\0${deviceId}`, 'hex');
  // RFC 9562 version 8 (custom) with the RFC variant bits.
  const variant = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
