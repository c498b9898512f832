import {
  Exchanges,
  derivePushId,
  jobExpiry,
  sendQueueFor,
  type DevicePush,
  type PushJob,
} from '@herald/contracts';
import type { TargetDevice } from '@herald/db';
import type { OutboundMessage } from '@herald/messaging';

/** One DevicePush per target device; pushIds are deterministic so a replayed job dedupes. */
export function devicePushesFor(job: PushJob, devices: readonly TargetDevice[], acceptedAt: Date): DevicePush[] {
  const expiresAt = jobExpiry(job, acceptedAt);
  return devices.map((d) => ({
    version: 1,
    pushId: derivePushId(job.id, d.deviceId),
    jobId: job.id,
    deviceId: d.deviceId,
    app: job.app,
    platform: d.platform,
    token: d.token,
    userId: d.userId,
    content: job.content,
    priority: job.priority,
    ...(job.collapseKey !== undefined && { collapseKey: job.collapseKey }),
    ...(expiresAt !== undefined && { expiresAt: expiresAt.toISOString() }),
    ...(job.ttl === 0 && { nowOrNever: true as const }),
    acceptedAt: acceptedAt.toISOString(),
    ...(job.trace === true && { trace: true }),
  }));
}

export function toSendMessage(push: DevicePush): OutboundMessage {
  const queue = sendQueueFor(push.platform);
  // Straight to the send queue, like the deschedulers (ADR 0005).
  return { exchange: Exchanges.direct, routingKey: queue, body: push, messageId: push.pushId };
}
