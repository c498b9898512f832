import type { Channel, ConsumeMessage, Options } from 'amqplib';
import { delayQueueFor, Exchanges, parkedQueueFor } from '@herald/contracts';
import { logSummary, type Logger } from '@herald/logging';
import type { AckWindow } from './ack-window.ts';
import { NO_RETURN_QUEUE } from './delay-relay.ts';
import { UnroutableError } from './errors.ts';
import { HeraldHeaders } from './headers.ts';
import type { MessagingMetrics } from './metrics.ts';
import type { ConfirmPublisher, RawOutbound } from './publisher.ts';
import { planDefer, planRetry, type RetryPlan } from './retry.ts';
import type { InboundMessage, NoteHeaders, Outcome } from './types.ts';

export interface Delivery {
  msg: ConsumeMessage;
  /** The channel it arrived on; it can only be acked there. */
  channel: Channel;
  /** That channel's acks (batched, see ack-window.ts). */
  acks: AckWindow;
  inbound: InboundMessage;
  /** Set when this is one part of a packed message (pack.ts): the message is acked once every part is settled. */
  pack?: PackState;
}

/** The parts of one packed message still to settle; `closed` once it was acked or given back (nacked). */
export interface PackState {
  remaining: number;
  closed: boolean;
}

export const RETRIES_EXHAUSTED = 'retries-exhausted';
/** Parked by the consumer: delivered up to the queue's delivery limit without being settled. */
export const DELIVERY_LIMIT = 'delivery-limit';
/** Sent to retry by the consumer: the handler failed on this message alone (ConsumeOptions.messageError). */
export const MESSAGE_ERROR = 'message-error';

/** What a settled outcome turned into, when it was a park: the code and reason of the parked copy. */
export interface Parked {
  code: string;
  reason: string;
}

/** The broker's redelivery count is about the original; a copy must not carry it (a fresh message keeps a published one). */
function copiedHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'x-delivery-count'));
}

/**
 * Properties a retry or park copy keeps from the original (not expiration: the copy sets its own).
 * A part of a packed message is copied as an ordinary JSON message with the part's own id.
 */
function copiedProperties(d: Delivery): Options.Publish {
  const p = d.msg.properties;
  const keep: Options.Publish = {
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    correlationId: p.correlationId,
    type: p.type,
    appId: p.appId,
    timestamp: p.timestamp,
    priority: p.priority,
    messageId: p.messageId,
    ...(d.pack !== undefined && { contentType: 'application/json', messageId: d.inbound.messageId }),
  };
  return Object.fromEntries(Object.entries(keep).filter(([, v]) => v !== undefined)) as Options.Publish;
}

/** Turns a retry or park outcome into a confirmed publish of a copy; the caller acks afterwards. */
export class Settler {
  constructor(
    private readonly queue: string,
    private readonly retryDelaysMs: readonly number[],
    private readonly publisher: ConfirmPublisher,
    private readonly metrics: MessagingMetrics,
    private readonly logger: Logger,
  ) {}

  /** Returns the park when the outcome ended in one (a park, or a retry that ran out). */
  /** `decidedAt`: when the handler chose the outcome; logged with a retry, whose copy's confirm may take long (a queue without a majority). */
  async apply(d: Delivery, outcome: Outcome, decidedAt = new Date()): Promise<Parked | undefined> {
    switch (outcome.kind) {
      case 'ack':
        return undefined;
      case 'retry':
        return this.retry(d, outcome.code, outcome.reason, outcome.delayMs, decidedAt, outcome.headers);
      case 'park':
        return this.park(d, outcome.code, outcome.reason, outcome.headers);
      case 'defer':
        await this.defer(d, outcome.code, outcome.reason, outcome.delayMs, outcome.spread === true, outcome.headers);
        return undefined;
      case 'forward':
        try {
          await this.forward(d, outcome.queue, outcome.asIs === true, outcome.waitMs);
        } catch (err) {
          // No such queue (deleted, renamed, misspelt by hand): no retry makes one, and a relay has
          // no delivery limit, so it would go round for good, unseen. Parked beside the delay queue.
          if (!(err instanceof UnroutableError)) throw err;
          return this.park(d, NO_RETURN_QUEUE, `the queue it goes back to, "${outcome.queue}", does not exist (${err.message}); replay it once that queue is back`);
        }
        return undefined;
    }
  }

  private async retry(d: Delivery, code: string, reason: string, delayMs: number | undefined, decidedAt: Date, headers?: NoteHeaders): Promise<Parked | undefined> {
    const attempt = d.inbound.attempt;
    const plan = planRetry(attempt, this.retryDelaysMs, delayMs);
    if (plan.kind === 'exhausted') return this.park(d, RETRIES_EXHAUSTED, reason, headers);
    await this.delay(d, plan, attempt + 1, reason, headers);
    this.metrics.retried.inc({ queue: this.queue, code });
    this.logger.info(
      { queue: this.queue, messageId: d.inbound.messageId, attempt, code, reason, delayMs: plan.expirationMs, decidedAt: decidedAt.toISOString() },
      'message scheduled for retry',
    );
  }

  private async defer(d: Delivery, code: string, reason: string, delayMs: number, spread: boolean, headers?: NoteHeaders): Promise<void> {
    const plan = planDefer(this.retryDelaysMs, delayMs, spread);
    if (plan.kind === 'exhausted') throw new Error(`cannot defer on ${this.queue}: no delay queues configured`);
    await this.delay(d, plan, d.inbound.attempt, reason, headers);
    this.metrics.retried.inc({ queue: this.queue, code });
    this.logger.debug({ queue: this.queue, messageId: d.inbound.messageId, code, reason, delayMs: plan.expirationMs }, 'message deferred');
  }

  /** Publish a copy to the delay queue of `plan`; its relay sends it back to this queue when it is due (delay-relay.ts). */
  private async delay(d: Delivery, plan: Extract<RetryPlan, { kind: 'delay' }>, attempt: number, reason: string, extra?: NoteHeaders): Promise<void> {
    const copy: RawOutbound = {
      exchange: Exchanges.direct,
      routingKey: delayQueueFor(plan.queueDelayMs),
      body: d.inbound.body,
      properties: copiedProperties(d),
      headers: {
        ...copiedHeaders(d.inbound.headers),
        ...extra,
        [HeraldHeaders.attempt]: attempt,
        [HeraldHeaders.retryReason]: reason,
        [HeraldHeaders.delay]: plan.queueDelayMs,
        [HeraldHeaders.returnTo]: this.queue,
        [HeraldHeaders.dueAt]: Date.now() + plan.expirationMs,
        [HeraldHeaders.waitMs]: plan.expirationMs,
      },
    };
    await this.publisher.publishMany([copy]);
  }

  /**
   * A waited message back to its queue, without the delay queue's own headers unless `asIs` (back
   * into the delay queue, to wait `waitMs` more).
   */
  private async forward(d: Delivery, queue: string, asIs: boolean, waitMs?: number): Promise<void> {
    const headers = copiedHeaders(d.inbound.headers);
    if (!asIs) {
      delete headers[HeraldHeaders.returnTo];
      delete headers[HeraldHeaders.dueAt];
      delete headers[HeraldHeaders.waitMs];
    } else if (waitMs !== undefined) {
      headers[HeraldHeaders.waitMs] = waitMs;
      headers[HeraldHeaders.dueAt] = Date.now() + waitMs;
    }
    await this.publisher.publishMany([{ exchange: Exchanges.direct, routingKey: queue, body: d.inbound.body, properties: copiedProperties(d), headers }]);
  }

  private async park(d: Delivery, code: string, reason: string, extra?: NoteHeaders): Promise<Parked> {
    const copy: RawOutbound = {
      exchange: '',
      routingKey: parkedQueueFor(this.queue),
      body: d.inbound.body,
      properties: copiedProperties(d),
      headers: {
        ...copiedHeaders(d.inbound.headers),
        ...extra,
        [HeraldHeaders.parkedReason]: reason,
        [HeraldHeaders.parkedCode]: code,
        [HeraldHeaders.parkedAt]: new Date().toISOString(),
        [HeraldHeaders.originalQueue]: this.queue,
        [HeraldHeaders.attempt]: d.inbound.attempt,
      },
    };
    await this.publisher.publishMany([copy]);
    this.metrics.parked.inc({ queue: this.queue, code });
    logSummary(this.logger, 'warn', 'message parked').note(`${this.queue}\u0000${code}`, { queue: this.queue, messageId: d.inbound.messageId, attempt: d.inbound.attempt, code, reason });
    return { code, reason };
  }
}
