import type { Logger } from '@herald/logging';
import type { Registry } from '@herald/runtime';
import type { Topology } from './topology.ts';

export interface BrokerOptions {
  url: string;
  logger: Logger;
  /** Shown in the RabbitMQ management UI; also the handle to force-close the connection there. */
  connectionName: string;
  metrics?: Registry;
  /**
   * The longest a delay queue's relay holds one message (default RELAY_MAX_HOLD_MS, 10 minutes):
   * one due later goes back to the tail of its delay queue, still due when it was, and comes round
   * again. Keeps every hold below RabbitMQ's consumer_timeout (30 minutes by default), after which
   * the broker would close the relay's channel.
   */
  relayMaxHoldMs?: number;
  /**
   * The longest a publish waits for RabbitMQ's confirm before it is rejected with
   * PublishFailedError (default: no limit). For callers who answer someone, such as the HTTP API
   * and the client library: a broker that blocks publishers (a memory or disk alarm) or stops
   * answering would otherwise hold them for good. The message may still arrive after the
   * deadline: publish it again with the same message id (Herald's job ids and push ids make the
   * second copy harmless). Services leave it unset: their deliveries wait for the broker instead.
   */
  confirmTimeoutMs?: number;
  /**
   * False for a process that never consumes (the API, the client library, the monitor, topology
   * scripts): one connection carries its publishes, declarations and probes, and consume() throws.
   * Otherwise (the default) consumers, relays, declarations and probes get a second connection
   * that never publishes, so a memory or disk alarm, which blocks publishing connections, does not
   * stop their acks.
   */
  consumes?: boolean;
}

export interface Broker {
  readonly publisher: Publisher & EachPublisher;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /** Declares exchanges, queues and bindings; idempotent and safe to run concurrently. */
  applyTopology(topology: Topology): Promise<void>;
  /**
   * Live ready-message and consumer counts (AMQP passive declare), unlike the management API's
   * statistics, which lag by its collection interval. Queues that do not exist are left out.
   */
  queueCounts(queues: readonly string[]): Promise<Map<string, QueueCounts>>;
  /**
   * Whether the process has what it needs of RabbitMQ now: not ready while one of its connections
   * is being re-opened or one of its consumers (delay relays included) is re-subscribing, each
   * named in `problems` with since when. A process's readiness (/readyz) is built on it.
   */
  health(): BrokerHealth;
  close(): Promise<void>;
}

export interface BrokerHealth {
  ready: boolean;
  /** What keeps it from being ready, one line each; empty when ready. */
  problems: string[];
}

export interface QueueCounts {
  ready: number;
  consumers: number;
}

export interface OutboundMessage {
  exchange: string;
  routingKey: string;
  /** Objects are JSON-encoded (content-type application/json); Buffers are sent as they are. */
  body: Buffer | object;
  /** Content type of a Buffer body (an object body is always application/json). */
  contentType?: string;
  headers?: Record<string, unknown>;
  messageId?: string;
  expirationMs?: number;
}

export interface Publisher {
  /** Persistent + mandatory; resolves on broker confirm, rejects on nack, channel loss or unroutable. */
  publish(msg: OutboundMessage): Promise<void>;
  /**
   * Writes all, then awaits all confirms; rejects with the first failure. With `packMax` > 1,
   * JSON messages to the same queue travel up to that many to an AMQP message (pack.ts); the
   * consumer's handler still sees each on its own.
   */
  publishMany(msgs: readonly OutboundMessage[], options?: PublishOptions): Promise<void>;
}

/** A publisher whose callers learn the fate of each message they gave it (coalesced-publish.ts). */
export interface EachPublisher {
  /**
   * publishMany, settling each message on its own: the result for `msgs[i]` is that of the AMQP
   * message that carried it, so a refused message fails only those it carried. Rejects as a whole
   * only when nothing could be sent.
   */
  publishEach(msgs: readonly OutboundMessage[], options?: PublishOptions): Promise<PromiseSettledResult<void>[]>;
}

export interface PublishOptions {
  packMax?: number;
}

export interface InboundMessage {
  body: Buffer;
  headers: Record<string, unknown>;
  routingKey: string;
  messageId?: string;
  redelivered: boolean;
  /** 1 on first delivery, from the x-herald-attempt header. */
  attempt: number;
  queue: string;
  /** Given to the handler again in this delivery: its batch failed on one message's own error and was split (ConsumeOptions.messageError). */
  rehandled?: true;
}

/** Headers an outcome sets on the message's copy, kept by its later copies (see the defer outcome). */
export type NoteHeaders = Readonly<Record<string, string | number>>;

export type Outcome =
  /**
   * `after`: work the message's ack waits for (a copy of what it found handed on, such as a dead
   * token's invalidation), done outside the batch so that one waiting message holds no other:
   * acked once it resolves; if it rejects, given back to the queue after a back-off, as a failed ack.
   */
  | { kind: 'ack'; after?: Promise<unknown> }
  /** `headers`: as a defer's. */
  | { kind: 'retry'; code: string; reason: string; delayMs?: number; headers?: NoteHeaders }
  /** `headers`: as a defer's, on the parked copy. */
  | { kind: 'park'; code: string; reason: string; headers?: NoteHeaders }
  /**
   * Come back after about delayMs without spending an attempt (e.g. another worker holds a lease).
   * `spread`: delayMs is only the earliest, shared by many messages (a pause's end): each comes back
   * up to 20 % of it later, at random, so they do not all arrive at one instant (retry.ts).
   * `headers`: set on the copy, and kept by its later copies (retries, deferrals, a park): the
   * handler's note to itself about this message (the pusher's: this push was sent before).
   */
  | { kind: 'defer'; code: string; reason: string; delayMs: number; spread?: true; headers?: NoteHeaders }
  /**
   * Publish the message's body and properties to `queue` (default exchange), then ack it: a delay
   * queue's relay sending a message back when due, without the relay's headers (where it goes
   * back to, when it is due), or with them (`asIs`) when it puts a message it held long enough back
   * into its delay queue.
   */
  | { kind: 'forward'; queue: string; asIs?: true; waitMs?: number };

/**
 * A message's outcome as handle() returns it: decided, or the promise of one, for a message whose
 * work goes on after its batch's (a webhook to a receiver that answers slowly). The consumer settles
 * each message once its outcome is decided, so one slow message holds no other's ack (nor its
 * place among maxInFlight). A promise that rejects is handled as a batch whose handler threw
 * (deferOn, else requeued after a back-off), for that message alone. Its batch counts among
 * batch.maxConcurrent until the last promise is settled, and stop() waits for them within its
 * bound; one settled after it finds the channel closed, and its message comes back.
 */
export type Decided = Outcome | Promise<Outcome>;

/** A message a consumer parked, and why (ConsumeOptions.onParked). */
export interface ParkedNotice {
  message: InboundMessage;
  code: string;
  reason: string;
}

export interface ConsumeOptions {
  queue: string;
  prefetch: number;
  /** Collect up to maxSize deliveries or wait maxWaitMs, then one handle() call. */
  batch?: {
    maxSize: number;
    maxWaitMs: number;
    /**
     * At most this many batches in handle() at once (default: no bound). While that many are, new
     * deliveries wait, and the next batch (up to maxSize) starts as soon as one ends, without
     * waiting maxWaitMs: batches grow with the load instead of with a timer (see batcher.ts).
     */
    maxConcurrent?: number;
  };
  /**
   * At most this many deliveries in handle() or being settled at once, each part of a packed
   * message counting as one (default: no bound but the prefetch). The prefetch counts messages, so
   * with packed messages it bounds what the process holds, not the work it does at once: deliveries
   * beyond this wait in the process, in the order they came, and go to the batches as earlier ones
   * are settled.
   */
  maxInFlight?: number;
  /** Attempt n (1-based) that returns retry waits retryDelaysMs[n-1]; afterwards the message is parked. */
  retryDelaysMs: readonly number[];
  /**
   * Must return one outcome per message, same order. Throw only for broken infrastructure, or for
   * an error `messageError` recognises as one message's own.
   * `stopping` aborts when the consumer stops: a handler that waits (a delay relay) gives up, and
   * its messages are given back quietly.
   */
  handle(messages: readonly InboundMessage[], stopping: AbortSignal): Promise<readonly Decided[]>;
  /**
   * A reason when an error the handler threw may be one message's own, not the infrastructure's
   * (the database refused a value it holds): the batch is then handled again in halves, down to
   * single messages, and a message that fails alone goes to retry with code `message-error` and
   * this reason (then parked with it), while the rest of its batch is handled as usual and the
   * consumer does not pause. Without it, or for any other error, the whole batch is requeued
   * after a back-off, and a message that keeps failing stalls its neighbours until the delivery limit.
   */
  messageError?(err: unknown): string | undefined;
  /**
   * A code and reason when an error the handler threw says a dependency is unavailable for now
   * (the database down or failing over): after the same back-off, the batch is deferred (settled
   * as `defer` with that code, through a delay queue) instead of requeued, so an outage spends
   * neither the messages' delivery count nor their attempts. Without it such an error requeues
   * the batch, and an outage longer than the delivery limit's back-offs (about 22 minutes at the
   * default 50) parks what the consumer held as `delivery-limit`.
   */
  deferOn?(err: unknown): { code: string; reason: string } | undefined;
  /**
   * The work queue's x-delivery-limit (default DEFAULT_DELIVERY_LIMIT). A message delivered that
   * many times without being settled (the handler threw, or a process died holding it) is parked
   * by the consumer on its next delivery, code `delivery-limit`, without reaching the handler: the
   * park then carries a reason and reaches onParked. The broker's own limit stays the backstop.
   */
  deliveryLimit?: number;
  /**
   * Asked of messages over the delivery limit before they are parked: true for one whose work is
   * already done (a pusher's ledger holds its push as sent), which is acked instead. A packed
   * message's parts share its deliveries, so a part that keeps failing would otherwise take its
   * siblings sent long ago to the parked queue, counted as parked and sent again if replayed once
   * the record of their sending is gone. Unset, or if it throws, every such message is parked.
   */
  alreadyDone?(messages: readonly InboundMessage[]): Promise<boolean[]>;
  /**
   * Told of every message this consumer parks (the handler's parks, retries that ran out, the
   * delivery limit), after the parked copy is confirmed and before the input is acked, e.g. to
   * record the outcome for a job's status. Best effort: a failure is logged and the input still acked.
   */
  onParked?(notice: ParkedNotice): Promise<void>;
}

export interface Consumer {
  readonly queue: string;
  /** Cancel the subscription, wait for in-flight handle() calls and promised outcomes (bounded by timeoutMs), settle them. */
  stop(timeoutMs: number): Promise<void>;
}
