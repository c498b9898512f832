import { entryConformanceIssues, jobConformanceIssues, jobNotices } from '@herald/providers';
import {
  ChangePublish,
  changeSizeProblem,
  DEFAULT_MAX_CHANGE_BYTES,
  Exchanges,
  FollowEvent,
  TopicMembership,
  type FollowEventInput,
  type TopicMembershipInput,
  PushJob,
  Queues,
  Registration,
  acceptedAtOf,
  expiredWhenAccepted,
  expiresBeforeDue,
  newJobIssues,
  scheduleProblem,
  type ChangeEvent,
  type PushJobInput,
  type RegistrationInput,
} from '@herald/contracts';
import { createLogger, type Logger } from '@herald/logging';
import { PublishFailedError, coalescedPublish, connectBroker, type Broker } from '@herald/messaging';
import type { z } from 'zod';
import { ValidationError, validate } from './validation.ts';

export { ValidationError } from './validation.ts';
/**
 * What a rejected publish means, told apart by class: PublishFailedError (JobPublishFailedError for
 * a job) may still arrive, so publish it again as it was; BrokerUnavailableError was refused before
 * it was sent (not connected, RabbitMQ blocking publishers), and PublishNotSentError, one of them,
 * waited past confirmTimeoutMs behind publishes RabbitMQ had not confirmed and was left out: nothing
 * of either will arrive, and the job may be corrected.
 */
export { BrokerUnavailableError, PublishFailedError, PublishNotSentError } from '@herald/messaging';

export interface HeraldClientOptions {
  /** RabbitMQ URL, including the vhost. */
  url: string;
  logger?: Logger;
  connectionName?: string;
  /** How far ahead a job may be scheduled (deliverAt); default 366 days, as the demuxer's default. */
  scheduleHorizonDays?: number;
  /**
   * Most jobs that share one RabbitMQ message when publishPushJob is called several times at once
   * (default DEFAULT_JOB_PACK_SIZE of @herald/messaging, 10; 1: one each). Each call still resolves on its own job's confirm (ADR 0018).
   */
  jobPackSize?: number;
  /**
   * Longest wait for RabbitMQ's confirm of a publish (default 30,000 ms); past it the call rejects
   * with JobPublishFailedError (a PublishFailedError), and the job may still arrive: publish its
   * `job` again, the same id and acceptedAt (Herald sends its pushes once). A call that was still
   * waiting behind earlier publishes RabbitMQ had not confirmed was never sent: it rejects with
   * PublishNotSentError (a BrokerUnavailableError, both exported here), and the job may be
   * corrected. A broker blocking publishers for a memory or disk alarm would otherwise hold the call for good.
   */
  confirmTimeoutMs?: number;
  /**
   * Told, once the job is published, what Herald will adapt or not deliver as asked (the sentences
   * the HTTP API answers as `notices` and the job's status shows): an expiry that misses the zones
   * whose local time comes after it, an FCM expiry past its 28 days. Default: a warning on `logger`.
   */
  onNotices?: (job: PushJob, notices: readonly string[]) => void;
  /**
   * Largest change event (JSON bytes, and of its diff) publishChange takes; default
   * DEFAULT_MAX_CHANGE_BYTES (64 KiB), the webhook-fanout's WEBHOOK_MAX_CHANGE_BYTES default: give
   * the deployment's value. A larger one is refused here, as the HTTP API answers it 413; published,
   * the fan-out would park it and its publisher would never hear.
   */
  maxChangeBytes?: number;
}

const DEFAULT_CONFIRM_TIMEOUT_MS = 30_000;

export interface HeraldClient {
  /** Validate, stamp acceptedAt, publish; resolves once RabbitMQ has confirmed the job is durable. */
  publishPushJob(job: PushJobInput): Promise<PushJob>;
  /**
   * Validate and publish a registration. A browser subscription is platform 'web' with token = its
   * endpoint and keys = its keys (subscriptionFields(pushSubscription.toJSON()) from @herald/contracts
   * gives both), optionally applicationServerKey. Which push services an app accepts is checked by the registrar.
   */
  publishRegistration(registration: RegistrationInput): Promise<Registration>;
  /**
   * A resource changed: validate, stamp occurredAt (default now), publish to push.changes; resolves
   * once RabbitMQ confirmed it. Herald diffs old and new and notifies the matching webhook
   * subscriptions. Publishing the same event id again notifies nobody twice.
   */
  publishChange(change: z.input<typeof ChangePublish>): Promise<ChangeEvent>;
  /** A user or single device joins or leaves a topic (kind 'topic-membership'); the registrar applies it, last event wins. */
  publishTopicMembership(event: TopicMembershipInput): Promise<TopicMembership>;
  /** subscribeToTopic / unsubscribeFromTopic: publishTopicMembership with subscribed set; eventAt defaults to now. */
  subscribeToTopic(member: TopicMemberInput): Promise<TopicMembership>;
  unsubscribeFromTopic(member: TopicMemberInput): Promise<TopicMembership>;
  /** "follower follows followee" (kind 'follow'); the registrar applies it, last event per edge wins. */
  publishFollowEvent(event: FollowEventInput): Promise<FollowEvent>;
  /** follow / unfollow: publishFollowEvent with following set; eventAt defaults to now. */
  follow(edge: FollowEdgeInput): Promise<FollowEvent>;
  unfollow(edge: FollowEdgeInput): Promise<FollowEvent>;
  close(): Promise<void>;
}

/** A topic member without kind and subscribed; eventAt optional (default now). */
export type TopicMemberInput = Omit<TopicMembershipInput, 'kind' | 'subscribed' | 'version' | 'eventAt'> & { eventAt?: string };
/** A follow edge without kind and following; eventAt optional (default now). */
export type FollowEdgeInput = Omit<FollowEventInput, 'kind' | 'following' | 'version' | 'eventAt'> & { eventAt?: string };

/**
 * RabbitMQ did not confirm a job (a nack, a channel closed, no confirm within confirmTimeoutMs): it
 * may still arrive. `job` is the job as published, its `acceptedAt` stamped: publish it again as it
 * is. The same input published again would be stamped anew, and refused while the first copy is
 * delivered if its expiry has passed since: an expiresAt CLOCK_SKEW_ALLOWANCE_MS (5 minutes) or
 * more before the new stamp, or a deliverAt's last due time plus its expiresAfter before it.
 */
export class JobPublishFailedError extends PublishFailedError {
  override name = 'JobPublishFailedError';
  constructor(
    readonly job: PushJob,
    cause: PublishFailedError,
  ) {
    super(`job "${job.id}" was not confirmed (${cause.message}): it may still arrive`, { cause });
  }
}

/** The library other teams use to hand Herald work over AMQP, typed from the contracts. */
export async function createHeraldClient(options: HeraldClientOptions): Promise<HeraldClient> {
  const logger = options.logger ?? createLogger({ service: 'herald-client', level: 'warn', format: 'json' });
  const confirmTimeoutMs = options.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS;
  const broker: Broker = await connectBroker({
    url: options.url,
    logger,
    connectionName: options.connectionName ?? 'herald-client',
    confirmTimeoutMs,
    consumes: false,
  });
  // Jobs published at once share RabbitMQ messages (each caller still resolved by its own job's confirm).
  const tellNotices = options.onNotices ?? ((job: PushJob, notices: readonly string[]) => logger.warn({ jobId: job.id, notices }, 'Herald adapts this job or does not deliver all of it as asked'));
  const publishJob = coalescedPublish(broker.publisher, { ...(options.jobPackSize !== undefined && { packMax: options.jobPackSize }), callTimeoutMs: confirmTimeoutMs });
  const client: HeraldClient = {
    async publishPushJob(input) {
      const job = validate(PushJob, 'push job', { ...input, acceptedAt: input.acceptedAt ?? new Date().toISOString() });
      const badSchedule = scheduleProblem(job.deliverAt, new Date(), options.scheduleHorizonDays);
      if (badSchedule !== undefined) throw new ValidationError('push job', [`deliverAt: ${badSchedule}`]);
      const acceptedAt = acceptedAtOf(job, new Date());
      const expires = expiredWhenAccepted(job, acceptedAt) ?? expiresBeforeDue(job, acceptedAt);
      if (expires !== undefined) throw new ValidationError('push job', [`${expires.path}: ${expires.message}`]);
      const fresh = newJobIssues(job);
      if (fresh.length > 0) throw new ValidationError('push job', fresh.map((i) => `${i.path}: ${i.message}`));
      // Apple's and Google's rules (sizes, headers), so a job they would refuse is never published.
      // Web Push's smaller size limit depends on the app having VAPID keys, which the client does
      // not know: the demuxer checks it against the app (and parks a job over it, payload-too-large).
      const issues = [...jobConformanceIssues(job, { web: false }), ...entryConformanceIssues(job)];
      if (issues.length > 0) throw new ValidationError('push job', issues.map((i) => `${i.path}: ${i.message}`));
      try {
        await publishJob({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: job, messageId: job.id });
      } catch (err) {
        if (err instanceof PublishFailedError) throw new JobPublishFailedError(job, err);
        throw err;
      }
      const notices = jobNotices(job, acceptedAtOf(job, new Date()));
      if (notices.length > 0) {
        // The job is published: a callback that throws must not make the call read as failed (it would be published again).
        try {
          tellNotices(job, notices);
        } catch (err) {
          logger.error({ err, jobId: job.id }, 'onNotices threw; the job is published');
        }
      }
      return job;
    },
    async publishRegistration(input) {
      const registration = validate(Registration, 'registration', input);
      await broker.publisher.publish({
        exchange: Exchanges.registrations,
        routingKey: Queues.registrations,
        body: registration,
      });
      return registration;
    },
    async publishChange(input) {
      const parsed = validate(ChangePublish, 'change event', input);
      const change: ChangeEvent = { ...parsed, occurredAt: parsed.occurredAt ?? new Date().toISOString() };
      const tooLarge = changeSizeProblem(change, options.maxChangeBytes ?? DEFAULT_MAX_CHANGE_BYTES);
      if (tooLarge !== undefined) throw new ValidationError('change event', [`${tooLarge.path}: ${tooLarge.message}`]);
      await broker.publisher.publish({ exchange: Exchanges.changes, routingKey: Queues.changes, body: change, messageId: change.id });
      return change;
    },
    async publishTopicMembership(input) {
      const event = validate(TopicMembership, 'topic membership', input);
      await broker.publisher.publish({ exchange: Exchanges.registrations, routingKey: Queues.registrations, body: event });
      return event;
    },
    async subscribeToTopic(member) {
      return client.publishTopicMembership({ ...member, kind: 'topic-membership', subscribed: true, eventAt: member.eventAt ?? new Date().toISOString() });
    },
    async unsubscribeFromTopic(member) {
      return client.publishTopicMembership({ ...member, kind: 'topic-membership', subscribed: false, eventAt: member.eventAt ?? new Date().toISOString() });
    },
    async publishFollowEvent(input) {
      const event = validate(FollowEvent, 'follow event', input);
      await broker.publisher.publish({ exchange: Exchanges.registrations, routingKey: Queues.registrations, body: event });
      return event;
    },
    async follow(edge) {
      return client.publishFollowEvent({ ...edge, kind: 'follow', following: true, eventAt: edge.eventAt ?? new Date().toISOString() });
    },
    async unfollow(edge) {
      return client.publishFollowEvent({ ...edge, kind: 'follow', following: false, eventAt: edge.eventAt ?? new Date().toISOString() });
    },
    close: () => broker.close(),
  };
  return client;
}
