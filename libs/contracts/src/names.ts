/**
 * Exchange, queue and routing-key names. Dotted, lower case, defined once.
 * Renaming one needs a migration plan (see docs/adr/0002-queue-topology.md).
 */
/** Apple (APNs), Google (FCM) and browsers (Web Push: RFC 8030 delivery, RFC 8291 encryption, RFC 8292 VAPID). */
export const Platforms = ['apns', 'fcm', 'web'] as const;
export type Platform = (typeof Platforms)[number];

/** What a fleet-wide outbound budget (`herald limits set`) can pace: each push platform, and webhooks. */
export const LimitedChannels = [...Platforms, 'webhook'] as const;
export type LimitedChannel = (typeof LimitedChannels)[number];

export const Exchanges = {
  /**
   * RabbitMQ's default exchange: routes to the queue named by the routing key. Device pushes go
   * to their send queue through it (docs/adr/0005-send-hop-through-the-default-exchange.md).
   */
  direct: '',
  jobs: 'push.jobs',
  send: 'push.send',
  invalidations: 'push.invalidations',
  registrations: 'push.registrations',
  /** Change events of resources webhook subscribers watch (issue 9). */
  changes: 'push.changes',
} as const;

export const Queues = {
  jobs: 'push.jobs',
  /** Chunk tasks of audience jobs ("expand job J from chunk k"), shared by every demuxer (ADR 0013). */
  fanout: 'push.fanout',
  apnsSend: 'push.apns.send',
  fcmSend: 'push.fcm.send',
  webSend: 'push.web.send',
  apnsInvalidations: 'push.apns.invalidations',
  fcmInvalidations: 'push.fcm.invalidations',
  webInvalidations: 'push.web.invalidations',
  registrations: 'push.registrations',
  /** Change events, fanned out to matching webhook subscriptions by the webhook-fanout. */
  changes: 'push.changes',
  /** One webhook delivery per (change, subscription), sent by the webhook-pusher. */
  webhookSend: 'push.webhook.send',
} as const;
export type WorkQueue = (typeof Queues)[keyof typeof Queues];
export const WorkQueues: readonly WorkQueue[] = Object.values(Queues);

/** Routing keys equal the queue names they are bound to, so a message says where it goes. */
const SEND_QUEUES: Record<Platform, WorkQueue> = { apns: Queues.apnsSend, fcm: Queues.fcmSend, web: Queues.webSend };
const INVALIDATION_QUEUES: Record<Platform, WorkQueue> = { apns: Queues.apnsInvalidations, fcm: Queues.fcmInvalidations, web: Queues.webInvalidations };
export const sendQueueFor = (platform: Platform): WorkQueue => SEND_QUEUES[platform];
/** Device pushes one message of `queue` may carry: `packSize` (PUSH_PACK_SIZE, ADR 0016) on the pushers' send queues, 1 elsewhere. */
export const pushesPerMessage =
  (packSize: number) =>
  (queue: string): number =>
    Object.values(SEND_QUEUES).some((q) => q === queue) ? packSize : 1;
export const invalidationQueueFor = (platform: Platform): WorkQueue => INVALIDATION_QUEUES[platform];

export const parkedQueueFor = (queue: string): string => `${queue}.parked`;
/**
 * Where a retried or deferred message waits `delayMs` before its relay sends it back (docs/adr/0001).
 * Releases before 2026-11-27 used `herald.retry.<ms>ms` queues that dead-lettered by TTL; those
 * drain by themselves and can be deleted once empty.
 */
export const delayQueueFor = (delayMs: number): string => `herald.delay.${delayMs}ms`;

/** Headers Herald sets on parked and retried messages. */
export const Headers = {
  attempt: 'x-herald-attempt',
  parkedReason: 'x-herald-parked-reason',
  parkedAt: 'x-herald-parked-at',
  originalQueue: 'x-herald-original-queue',
  retryReason: 'x-herald-retry-reason',
  delay: 'x-herald-delay-ms',
  /** On a message in a delay queue: the queue it goes back to. */
  returnTo: 'x-herald-return-to',
  /** On a message in a delay queue: when it goes back (epoch ms, by the clock of the process that wrote it). */
  dueAt: 'x-herald-due-at',
  /**
   * On a message in a delay queue: the whole wait it was given (ms). A relay waits until dueAt, which
   * another host's clock wrote, but never longer than this: a relay behind the writer held each
   * message that much longer (delay-relay.ts).
   */
  waitMs: 'x-herald-wait-ms',
} as const;
