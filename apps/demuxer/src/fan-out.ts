import {
  Exchanges,
  derivePushId,
  effectivePushType,
  isNowOrNever,
  jobExpiry,
  sendQueueFor,
  tokenKindFor,
  type DevicePush,
  type PushJob,
} from '@herald/contracts';
import type { TargetDevice } from '@herald/db';
import type { OutboundMessage, Publisher } from '@herald/messaging';
import { platformsFor } from '@herald/providers';

/**
 * The devices a job's push type can reach: VoIP and Live Activity pushes only the APNs tokens
 * registered for them, every other push only device tokens (Apple refuses a push sent to a token
 * of another kind with DeviceTokenNotForTopic, which would invalidate a good token), and only on
 * the job's platforms (platformsFor: a background push reaches browsers only with `content.web`).
 * A device left out is not addressed: a user with no other device counts as without a device.
 */
export function reachableDevices<D extends TargetDevice>(job: PushJob, devices: readonly D[]): D[] {
  const kind = tokenKindFor(effectivePushType(job.content));
  const platforms = platformsFor(job.content);
  return devices.filter((d) => d.tokenKind === kind && platforms.includes(d.platform));
}

/**
 * One DevicePush per target device; pushIds are deterministic so a replayed job dedupes. `askedAt`:
 * when the devices' users' opt-outs and mutes were read.
 */
export function devicePushesFor(job: PushJob, devices: readonly TargetDevice[], acceptedAt: Date, askedAt: Date): DevicePush[] {
  const expiresAt = jobExpiry(job, acceptedAt);
  const asked = askedAt.toISOString();
  return devices.map((d) => ({
    version: 1,
    pushId: derivePushId(job.id, d.deviceId),
    jobId: job.id,
    deviceId: d.deviceId,
    app: job.app,
    platform: d.platform,
    token: d.token,
    ...(d.webKeys !== undefined && { webKeys: d.webKeys }),
    ...(d.webVapidKey !== undefined && { webVapidKey: d.webVapidKey }),
    userId: d.userId,
    ...(d.toDevice === true && { toDevice: true as const }),
    category: job.category,
    ...(job.objectId !== undefined && { objectId: job.objectId }),
    askedAt: asked,
    content: job.content,
    priority: job.priority,
    ...(job.collapseKey !== undefined && { collapseKey: job.collapseKey }),
    ...(expiresAt !== undefined && { expiresAt: expiresAt.toISOString() }),
    ...(isNowOrNever(job) && { nowOrNever: true as const }),
    acceptedAt: acceptedAt.toISOString(),
    ...(job.trace === true && { trace: true }),
  }));
}

export function toSendMessage(push: DevicePush): OutboundMessage {
  const queue = sendQueueFor(push.platform);
  // Straight to the send queue, like the deschedulers (ADR 0005).
  return { exchange: Exchanges.direct, routingKey: queue, body: push, messageId: push.pushId };
}

/**
 * Device pushes a part or a chunk publishes at once, each slice confirmed before the next is
 * serialised: a part's users and a chunk's size bound what they target, not its devices (a user
 * with thousands, jobs of 4 KB content), and 20,000 pushes of 3.9 KB held 152 MB of message bodies
 * at once against the demuxer's 320 MiB.
 */
export const PUBLISH_SLICE = 2_000;

/** Publish `pushes` to their send queues, `slice` at a time (PUBLISH_SLICE), each slice confirmed before the next. */
export async function publishSliced(publisher: Pick<Publisher, 'publishMany'>, pushes: readonly DevicePush[], packMax: number, slice = PUBLISH_SLICE): Promise<void> {
  for (let from = 0; from < pushes.length; from += slice) {
    await publisher.publishMany(pushes.slice(from, from + slice).map(toSendMessage), { packMax });
  }
}
