import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '@herald/logging';
import { AckWindow } from './ack-window.ts';
import { Batcher } from './batcher.ts';
import { coalesceWrites } from './coalesce-writes.ts';
import type { BrokerConnection } from './connection.ts';
import { toInbound } from './inbound.ts';
import { isPacked, PACK_IDS_HEADER, unpack } from './pack.ts';
import type { MessagingMetrics } from './metrics.ts';
import { handlerBackoffMs } from './retry.ts';
import { DELIVERY_LIMIT, MESSAGE_ERROR, type Delivery, type PackState, type Parked, type Settler } from './settle.ts';
import { sleep } from './sleep.ts';
import { DEFAULT_DELIVERY_LIMIT } from './topology.ts';
import type { ConsumeOptions, Consumer, Decided, Outcome } from './types.ts';

/** The shortest deferral of a batch whose dependency is unavailable (options.deferOn). */
const MIN_DEFER_MS = 1_000;
/** How long onParked may take before the parked message is acked without it, and alreadyDone before messages over the limit are parked. */
const HOOK_TIMEOUT_MS = 5_000;

export interface ConsumerDeps {
  connection: BrokerConnection;
  settler: Settler;
  metrics: MessagingMetrics;
  logger: Logger;
}

/**
 * One queue subscription on its own channel. When the channel dies (connection loss, server-side
 * cancel) it re-subscribes by itself once the connection is back; work finished on a dead channel
 * is not acked and will be redelivered.
 */
export class QueueConsumer implements Consumer {
  readonly queue: string;
  private channel: Channel | undefined;
  private consumerTag: string | undefined;
  private stopping = false;
  /** When its subscription was lost (epoch ms), while it re-subscribes. */
  private lostAt: number | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Each subscription's acks (ack-window.ts): batched per tick, multiple-ack where they are contiguous. */
  private readonly acks = new WeakMap<Channel, AckWindow>();
  private readonly batcher: Batcher<Delivery>;
  /** Deliveries in the batcher, in handle() or being settled (bounded by options.maxInFlight). */
  private active = 0;
  /** Messages held beyond options.maxInFlight, oldest first; a packed one stays whole until it goes in. */
  private waiting: Delivery[] = [];
  /** The parts of the packed message going in that have not found room yet. */
  private rest: Delivery[] = [];
  private readonly stopSignal = new AbortController();
  private consecutiveErrors = 0;
  private pausedUntil = 0;

  constructor(
    private readonly options: ConsumeOptions,
    private readonly deps: ConsumerDeps,
  ) {
    this.queue = options.queue;
    const batch = options.batch ?? { maxSize: 1, maxWaitMs: 0 };
    this.batcher = new Batcher<Delivery>(batch.maxSize, batch.maxWaitMs, (items) => {
      const settled = this.deps.metrics.batches.take(this.queue);
      // A delivery's place among maxInFlight comes back once it is settled, not with its whole
      // batch: one whose settling waits (its retry copy unconfirmed while RabbitMQ blocks
      // publishing in an alarm) keeps its own place only, and the queue goes on draining.
      const held = new Set(items);
      const done = (d: Delivery): void => {
        if (held.delete(d)) this.release(1);
      };
      return this.track(
        this.process(items, done).finally(() => {
          settled();
          const rest = held.size;
          held.clear();
          this.release(rest);
        }),
      );
    }, batch.maxConcurrent);
  }

  /** Subscribes; rejects if the first subscription fails (e.g. the queue does not exist). */
  async start(): Promise<void> {
    await this.subscribe();
  }

  /** When its subscription was lost (epoch ms), while it is re-subscribing; undefined while it consumes or once stopped. */
  unsubscribedSince(): number | undefined {
    return this.stopping ? undefined : this.lostAt;
  }

  async stop(timeoutMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopSignal.abort();
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    for (const d of [...this.batcher.drain(), ...this.rest, ...this.waiting]) this.nack(d);
    this.rest = [];
    this.waiting = [];
    const settled = Promise.allSettled([...this.inFlight]);
    await Promise.race([settled, sleep(timeoutMs)]);
    if (this.inFlight.size > 0) {
      this.deps.logger.warn({ queue: this.queue, inFlight: this.inFlight.size }, 'consumer stop timed out; unfinished messages will be redelivered');
    }
    // Acks still waiting for the end of their tick go out before the channel closes.
    if (channel !== undefined) safely(() => this.acks.get(channel)?.flush());
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  private async subscribe(): Promise<void> {
    const channel = await this.deps.connection.model.createChannel();
    coalesceWrites(channel);
    const acks = new AckWindow(channel);
    this.acks.set(channel, acks);
    channel.on('error', (err: Error) => this.deps.logger.warn({ err, queue: this.queue }, 'consumer channel error'));
    channel.on('close', () => this.onChannelClosed(channel));
    try {
      await channel.prefetch(this.options.prefetch);
      const { consumerTag } = await channel.consume(this.queue, (msg) => this.onMessage(channel, acks, msg), { noAck: false });
      this.channel = channel;
      this.consumerTag = consumerTag;
      this.lostAt = undefined;
      if (this.stopping) await channel.close();
    } catch (err) {
      await channel.close().catch(() => undefined);
      throw new Error(`cannot consume from queue "${this.queue}": ${(err as Error).message}`, { cause: err });
    }
    this.deps.logger.info({ queue: this.queue, prefetch: this.options.prefetch }, 'consuming');
  }

  private onMessage(channel: Channel, acks: AckWindow, msg: ConsumeMessage | null): void {
    if (msg === null) {
      this.deps.logger.warn({ queue: this.queue }, 'consumer cancelled by the broker; re-subscribing');
      channel.close().catch(() => undefined);
      return;
    }
    acks.delivered(msg);
    const delivery: Delivery = { msg, channel, acks, inbound: toInbound(msg, this.queue) };
    this.deps.metrics.consumed.inc({ queue: this.queue });
    if (this.stopping) return this.nack(delivery);
    this.waiting.push(delivery);
    this.pump();
  }

  /** Hands waiting deliveries to the batcher, a packed message part by part, while fewer than options.maxInFlight are in hand. */
  private pump(): void {
    const max = this.options.maxInFlight ?? Infinity;
    while (this.active < max && !this.stopping) {
      if (this.rest.length === 0) {
        const next = this.waiting.shift();
        if (next === undefined) return;
        this.rest = isPacked(next.msg.properties.contentType as string | undefined, next.inbound.headers) ? parts(next) : [next];
      }
      const going = this.rest.splice(0, max - this.active);
      this.active += going.length;
      going.forEach((d) => this.batcher.add(d));
    }
  }

  /** `n` deliveries were settled, given back or dropped: waiting ones take their place. */
  private release(n: number): void {
    this.active -= n;
    this.pump();
  }

  private onChannelClosed(channel: Channel): void {
    this.waiting = this.waiting.filter((d) => d.channel !== channel);
    this.rest = this.rest.filter((d) => d.channel !== channel);
    this.release(this.batcher.discard((d) => d.channel === channel));
    if (this.channel !== channel) return;
    this.channel = undefined;
    if (this.stopping) return;
    this.lostAt = Date.now();
    this.deps.logger.warn({ queue: this.queue }, 'consumer channel closed; re-subscribing when the connection is back');
    void this.resubscribe();
  }

  private async resubscribe(): Promise<void> {
    for (let attempt = 1; !this.stopping && !this.deps.connection.isClosed(); attempt++) {
      try {
        await this.subscribe();
        return;
      } catch (err) {
        if (this.deps.connection.isClosed()) return;
        const delayMs = handlerBackoffMs(attempt);
        this.deps.logger.warn({ err, queue: this.queue, attempt, delayMs }, 're-subscribe failed; trying again');
        await sleep(delayMs, this.stopSignal.signal);
      }
    }
  }

  private track(work: Promise<void>): Promise<void> {
    const tracked = work.catch((err: unknown) => this.deps.logger.error({ err, queue: this.queue }, 'unexpected error while processing deliveries'));
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
    return tracked;
  }

  /** `done(d)`: d is settled (its place among maxInFlight is free); whatever is not is freed when this ends. */
  private async process(delivered: Delivery[], done: (d: Delivery) => void): Promise<void> {
    await sleep(this.pausedUntil - Date.now(), this.stopSignal.signal);
    if (this.stopping) return delivered.forEach((d) => this.nack(d));
    const limit = this.options.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT;
    const spent = delivered.filter((d) => deliveriesOf(d) > limit);
    const batch = spent.length === 0 ? delivered : delivered.filter((d) => !spent.includes(d));
    const spentOutcomes = await this.overLimitOutcomes(spent, limit);
    await Promise.all(spent.map((d, i) => this.settle(d, spentOutcomes[i] ?? overLimit(d, limit)).finally(() => done(d))));
    if (batch.length === 0) return;
    let outcomes: readonly Decided[];
    try {
      outcomes = await this.outcomesOf(batch);
    } catch (err) {
      return this.handlerFailed(batch, err);
    }
    this.consecutiveErrors = 0;
    const decidedAt = new Date();
    await Promise.all(batch.map((d, i) => this.settleDecided(d, outcomes[i] ?? { kind: 'ack' }, decidedAt).finally(() => done(d))));
  }

  /** The handler threw for `batch` (or a message's promised outcome rejected, for that message alone). */
  private handlerFailed(batch: Delivery[], err: unknown): Promise<void> {
    // A handler cut short by this consumer's stop (its `stopping` signal: a delay relay's wait) gives its messages back quietly.
    if (this.stopping) {
      batch.forEach((d) => this.nack(d));
      return Promise.resolve();
    }
    // Once a failed batch (a message's own error, found by halving, is a retry, not this).
    this.deps.metrics.handlerErrors.inc({ queue: this.queue });
    const unavailable = this.options.deferOn?.(err);
    if (unavailable !== undefined) return this.backOffAndDefer(batch, err, unavailable);
    return this.backOffAndRequeue(batch, err, 'handler failed');
  }

  /** Settles `d` once its outcome is decided: at once, or when its promise resolves (Decided). */
  private async settleDecided(d: Delivery, outcome: Decided, decidedAt: Date): Promise<void> {
    if (!(outcome instanceof Promise)) return this.settle(d, outcome, decidedAt);
    let decided: Outcome;
    try {
      decided = await outcome;
    } catch (err) {
      return this.handlerFailed([d], err);
    }
    return this.settle(d, decided);
  }

  /** Parks for messages over the delivery limit, an ack for those options.alreadyDone says are done. */
  private async overLimitOutcomes(spent: readonly Delivery[], limit: number): Promise<Outcome[]> {
    const check = this.options.alreadyDone;
    if (spent.length === 0 || check === undefined) return spent.map((d) => overLimit(d, limit));
    let done: boolean[] = [];
    try {
      // Bounded, and cut short by a stop: a message over the limit given back unsettled is the broker's to dead-letter, whole and untold.
      done = await within(check(spent.map((d) => d.inbound)), HOOK_TIMEOUT_MS, 'alreadyDone', this.stopSignal.signal);
    } catch (err) {
      this.deps.logger.warn({ err, queue: this.queue }, 'could not tell whether messages over the delivery limit were already done; parking them');
    }
    return spent.map((d, i) => {
      if (done[i] !== true) return overLimit(d, limit);
      this.deps.logger.info({ queue: this.queue, messageId: d.inbound.messageId, deliveries: deliveriesOf(d) }, 'over the delivery limit but already done; acked, not parked');
      return { kind: 'ack' };
    });
  }

  /**
   * The handler's outcomes for `batch`. An error options.messageError recognises as one message's
   * own splits the batch in halves, each handled again, down to the message that fails alone: it
   * goes to retry with the reason, the others get their outcomes as usual. Any other error is
   * thrown, for the whole batch.
   */
  private async outcomesOf(batch: Delivery[]): Promise<readonly Decided[]> {
    try {
      const outcomes = await this.options.handle(batch.map((d) => d.inbound), this.stopSignal.signal);
      // A promised outcome may reject before it is awaited (while the rest of a halved batch is
      // handled), or never be (this batch thrown back): handled here, it cannot end the process.
      for (const o of outcomes) if (o instanceof Promise) o.catch(() => undefined);
      if (outcomes.length !== batch.length) {
        throw new Error(`handle() returned ${outcomes.length} outcomes for ${batch.length} messages`);
      }
      return outcomes;
    } catch (err) {
      const reason = this.stopping ? undefined : this.options.messageError?.(err);
      if (reason === undefined) throw err;
      if (batch.length === 1) {
        this.deps.logger.warn({ err, queue: this.queue, messageId: batch[0]?.inbound.messageId, reason }, 'handler failed on this message alone; sending it to retry');
        return [{ kind: 'retry', code: MESSAGE_ERROR, reason }];
      }
      const half = Math.ceil(batch.length / 2);
      for (const d of batch) d.inbound.rehandled = true;
      return [...(await this.outcomesOf(batch.slice(0, half))), ...(await this.outcomesOf(batch.slice(half)))];
    }
  }

  /** `decidedAt`: when the handler chose the outcome (settling a retry can wait long for its copy's confirm). */
  private async settle(d: Delivery, outcome: Outcome, decidedAt = new Date()): Promise<void> {
    if (!this.isLive(d)) return this.logGone(d, outcome, decidedAt);
    if (givenBack(d)) return this.logGivenBack(d, outcome, decidedAt);
    let parked: Parked | undefined;
    try {
      if (outcome.kind === 'ack' && outcome.after !== undefined) await outcome.after;
      // A part that gave its packed message back meanwhile: this part comes again with it, so no
      // retry or parked copy of it now (a second retry chain, a second parked copy).
      if (givenBack(d)) return this.logGivenBack(d, outcome, decidedAt);
      parked = await this.deps.settler.apply(d, outcome, decidedAt);
    } catch (err) {
      if (!this.isLive(d)) return this.logGone(d, outcome, decidedAt);
      return this.backOffAndRequeue([d], err, `could not ${outcome.kind} message`, settling(d, outcome, decidedAt));
    }
    if (parked !== undefined) await this.tellParked(d, parked);
    if (!this.isLive(d)) return this.logGone(d, outcome, decidedAt);
    if (d.pack !== undefined) {
      // A packed message is acked with its last part, unless a part gave it back meanwhile.
      d.pack.remaining -= 1;
      if (d.pack.remaining > 0 || d.pack.closed) return;
      d.pack.closed = true;
    }
    d.acks.ack(d.msg);
    this.deps.metrics.acked.inc({ queue: this.queue });
  }

  /**
   * onParked is best effort: the parked copy is confirmed, so the input is acked whatever it does,
   * and it gets at most HOOK_TIMEOUT_MS (a hung database must not stall the queue).
   */
  private async tellParked(d: Delivery, parked: Parked): Promise<void> {
    if (this.options.onParked === undefined) return;
    try {
      await within(this.options.onParked({ message: d.inbound, ...parked }), HOOK_TIMEOUT_MS, 'onParked');
    } catch (err) {
      this.deps.logger.warn({ err, queue: this.queue, messageId: d.inbound.messageId, code: parked.code }, 'onParked failed; the message is parked all the same');
    }
  }

  /** Pause the consumer for the next back-off (0.5 s … 30 s while errors continue); the ms left of the pause. */
  private pause(): number {
    if (Date.now() >= this.pausedUntil) {
      this.consecutiveErrors++;
      this.pausedUntil = Date.now() + handlerBackoffMs(this.consecutiveErrors);
    }
    return this.pausedUntil - Date.now();
  }

  /** Broken infrastructure: pause the consumer (0.5 s … 30 s while errors continue), then requeue. */
  private async backOffAndRequeue(batch: Delivery[], err: unknown, what: string, details: Record<string, unknown> = {}): Promise<void> {
    const backoffMs = this.pause();
    this.deps.logger.error({ err, queue: this.queue, messages: batch.length, consecutiveErrors: this.consecutiveErrors, backoffMs, ...details }, `${what}; requeueing after back-off`);
    await sleep(backoffMs, this.stopSignal.signal);
    batch.forEach((d) => this.nack(d));
  }

  /**
   * A dependency is unavailable (options.deferOn): pause as backOffAndRequeue does, then defer the
   * batch for at least the pause, spending neither delivery count nor attempt.
   */
  private async backOffAndDefer(batch: Delivery[], err: unknown, unavailable: { code: string; reason: string }): Promise<void> {
    const backoffMs = this.pause();
    this.deps.logger.error({ err, queue: this.queue, messages: batch.length, consecutiveErrors: this.consecutiveErrors, backoffMs, code: unavailable.code }, 'handler failed: a dependency is unavailable; deferring the batch after back-off');
    await sleep(backoffMs, this.stopSignal.signal);
    if (this.stopping) return batch.forEach((d) => this.nack(d));
    // Spread above the pause: every consumer of the queue defers what it holds at about once.
    const outcome: Outcome = { kind: 'defer', code: unavailable.code, reason: unavailable.reason, delayMs: Math.max(MIN_DEFER_MS, backoffMs), spread: true };
    await Promise.all(batch.map((d) => this.settle(d, outcome)));
  }

  /** Give a message back to the queue; a packed one once, whichever of its parts asks first (all of them come back). */
  private nack(d: Delivery): void {
    if (d.pack !== undefined) {
      if (d.pack.closed) return;
      d.pack.closed = true;
    }
    if (this.isLive(d)) safely(() => d.acks.nack(d.msg, true));
  }

  private isLive(d: Delivery): boolean {
    return this.channel === d.channel;
  }

  private logGone(d: Delivery, outcome: Outcome, decidedAt: Date): void {
    this.deps.logger.info({ queue: this.queue, ...settling(d, outcome, decidedAt) }, 'channel closed before settling; message will be redelivered');
  }

  private logGivenBack(d: Delivery, outcome: Outcome, decidedAt: Date): void {
    this.deps.logger.info({ queue: this.queue, ...settling(d, outcome, decidedAt) }, 'another part gave this packed message back before this part was settled; it comes again with the rest');
  }
}

/** A packed message as one delivery per part (pack.ts): the part's body and id, the envelope's other headers. */
function parts(d: Delivery): Delivery[] {
  const { [PACK_IDS_HEADER]: ids, ...headers } = d.inbound.headers;
  const split = unpack(d.msg.content, ids);
  const pack: PackState = { remaining: split.length, closed: false };
  return split.map((part, i) => ({
    ...d,
    pack,
    inbound: { ...d.inbound, headers, body: part.body, messageId: part.messageId ?? `${d.inbound.messageId ?? 'packed'}#${i}` },
  }));
}

/** A part of a packed message that another part gave back (nacked whole, or a stop gave it back). */
const givenBack = (d: Delivery): boolean => d.pack?.closed === true;

/** What a settle log says of its message: which one, the outcome the handler chose (a retry's code too) and when. */
function settling(d: Delivery, outcome: Outcome, decidedAt: Date): Record<string, unknown> {
  return { messageId: d.inbound.messageId, outcome: outcome.kind, ...('code' in outcome && { code: outcome.code }), decidedAt: decidedAt.toISOString() };
}

/**
 * How many times this message has been delivered, this time included: the broker counts the times
 * it came back unsettled in x-delivery-count (only on a redelivery: a fresh message may carry a
 * stale one a publisher copied).
 */
function deliveriesOf(d: Delivery): number {
  if (!d.msg.fields.redelivered) return 1;
  const raw = d.inbound.headers['x-delivery-count'];
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 0 ? n + 1 : 1;
}

function overLimit(d: Delivery, limit: number): Outcome {
  const reason = `delivered ${deliveriesOf(d)} times without being settled (the handler failed or its process stopped each time); the delivery limit is ${limit}`;
  return { kind: 'park', code: DELIVERY_LIMIT, reason };
}

/** `work`'s result, or a rejection once `ms` have passed or `signal` aborted (the work itself goes on, unheeded). */
async function within<T>(work: Promise<T>, ms: number, what: string, signal?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const cut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    onAbort = () => reject(new Error(`${what} cut short by the consumer's stop`));
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, cut]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

/** ack/nack on a channel that closed meanwhile throws; the broker requeues those messages anyway. */
function safely(op: () => void): void {
  try {
    op();
  } catch {
    // channel already closed
  }
}
