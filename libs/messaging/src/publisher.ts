import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import type { Logger } from '@herald/logging';
import type { Socket } from 'node:net';
import { coalesceWrites, socketOf } from './coalesce-writes.ts';
import type { BrokerConnection } from './connection.ts';
import { BrokerUnavailableError, PublishFailedError, UnroutableError } from './errors.ts';
import type { MessagingMetrics } from './metrics.ts';
import { sleep } from './sleep.ts';
import { packMessages } from './pack.ts';
import type { EachPublisher, OutboundMessage, PublishOptions, Publisher } from './types.ts';

/** An outbound message plus AMQP properties copied from another message (retry and park copies). */
export interface RawOutbound extends OutboundMessage {
  properties?: Options.Publish;
}

interface InFlight {
  messageId: string;
  exchange: string;
  routingKey: string;
  returned?: string;
}

interface ChannelState {
  channel: ConfirmChannel;
  /** A Set: confirms of a large batch remove entries one by one, and an array made that quadratic. */
  inFlight: Set<InFlight>;
}

function encode(body: Buffer | object, bufferType: string | undefined): { content: Buffer; contentType?: string } {
  if (Buffer.isBuffer(body)) return { content: body, contentType: bufferType };
  return { content: Buffer.from(JSON.stringify(body)), contentType: 'application/json' };
}

/** After a nack: the first pause, doubled for each further nack without a confirm between, capped. */
const NACK_PAUSE_MS = 100;
const NACK_PAUSE_MAX_MS = 5_000;

/**
 * Publishes on one confirm channel, persistent and mandatory. A mandatory message that matches
 * no queue comes back as basic.return before its confirm; the return is matched to its publish by
 * message id, exchange and routing key (every message gets a message id).
 */
export class ConfirmPublisher implements Publisher, EachPublisher {
  private state: Promise<ChannelState> | undefined;
  /** Nacks since the last confirm: a queue without a majority (a cluster that lost nodes) nacks everything. */
  private nackRun = 0;
  private pausedUntil = 0;

  constructor(
    private readonly connection: BrokerConnection,
    private readonly metrics: MessagingMetrics,
    private readonly logger: Logger,
    /** BrokerOptions.confirmTimeoutMs: undefined waits for the confirm as long as it takes. */
    private readonly confirmTimeoutMs?: number,
  ) {}

  publish(msg: OutboundMessage): Promise<void> {
    return this.publishMany([msg]);
  }

  async publishMany(all: readonly RawOutbound[], options: PublishOptions = {}): Promise<void> {
    const results = await this.publishEach(all, options);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async publishEach(all: readonly RawOutbound[], options: PublishOptions = {}): Promise<PromiseSettledResult<void>[]> {
    if (all.length === 0) return [];
    const packed = packMessages(all, options.packMax ?? 1);
    if (!this.connection.isConnected()) {
      throw new BrokerUnavailableError('not connected to RabbitMQ (recovering); message not published');
    }
    // A run of nacks holds every publisher back (a fresh channel, growing pauses) instead of a tight re-publish loop.
    const deadline = this.confirmTimeoutMs === undefined ? undefined : Date.now() + this.confirmTimeoutMs;
    // A caller with a deadline (the HTTP API, the client library) is told at once while RabbitMQ
    // blocks this connection (a memory or disk alarm): its frames would only queue in this process,
    // each call's and each retry's, until the alarm ends, and the confirm could not come in time.
    const blocked = deadline === undefined ? undefined : this.connection.blocked();
    if (blocked !== undefined) {
      throw new BrokerUnavailableError(`RabbitMQ is blocking publishers (${blocked.reason}, for ${Math.round((Date.now() - blocked.since) / 1000)} s); message not published`);
    }
    if (this.pausedUntil > Date.now()) await sleep(this.pausedUntil - Date.now());
    // Opening the channel waits for the broker too: a broker that stops answering holds it as long.
    const state = await this.beforeDeadline(this.channelState(), deadline);
    const sent = await Promise.allSettled(packed.map((p) => this.send(state, p.msg, deadline)));
    const results: PromiseSettledResult<void>[] = new Array(all.length);
    packed.forEach((p, i) => p.carries.forEach((input) => (results[input] = sent[i] as PromiseSettledResult<void>)));
    return results;
  }

  /** The socket under this publisher's channel, if it has one (socketOf). */
  async socket(): Promise<Socket | undefined> {
    const state = await this.state?.catch(() => undefined);
    return socketOf(state?.channel);
  }

  async close(): Promise<void> {
    const state = this.state;
    this.state = undefined;
    if (!state) return;
    try {
      await (await state).channel.close();
    } catch {
      // already closed with its connection
    }
  }

  private send(state: ChannelState, msg: RawOutbound, deadline: number | undefined): Promise<void> {
    const { content, contentType } = encode(msg.body, msg.contentType);
    const messageId = msg.messageId ?? msg.properties?.messageId ?? randomUUID();
    const options: Options.Publish = {
      contentType,
      ...msg.properties,
      messageId,
      headers: headersOf(msg),
      persistent: true,
      mandatory: true,
      expiration: msg.expirationMs === undefined ? undefined : String(Math.max(0, Math.round(msg.expirationMs))),
    };
    const entry: InFlight = { messageId, exchange: msg.exchange, routingKey: msg.routingKey };
    return new Promise<void>((resolve, reject) => {
      state.inFlight.add(entry);
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const done = (err: unknown): void => {
        // A confirm that arrives after the deadline finds the publish already rejected.
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        state.inFlight.delete(entry);
        if (err && isNack(err)) this.onNack(state);
        if (err) return reject(new PublishFailedError(`publish to "${msg.exchange}" not confirmed: ${describe(err)}`, { cause: err }));
        if (entry.returned !== undefined) return reject(new UnroutableError(msg.exchange, msg.routingKey, entry.returned));
        this.nackRun = 0;
        this.metrics.published.inc({ exchange: msg.exchange });
        resolve();
      };
      if (deadline !== undefined) timer = setTimeout(() => done(this.unconfirmed()), Math.max(0, deadline - Date.now()));
      try {
        state.channel.publish(msg.exchange, msg.routingKey, content, options, done);
      } catch (err) {
        done(err);
      }
    });
  }

  private beforeDeadline<T>(pending: Promise<T>, deadline: number | undefined): Promise<T> {
    if (deadline === undefined) return pending;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new PublishFailedError(`not published: ${this.unconfirmed().message}`)), Math.max(0, deadline - Date.now()));
    });
    return Promise.race([pending, late]).finally(() => clearTimeout(timer));
  }

  /** The deadline's reason, naming RabbitMQ's block (a memory or disk alarm) when it told us of one. */
  private unconfirmed(): Error {
    const blocked = this.connection.blocked();
    const why = blocked === undefined ? 'no answer from RabbitMQ' : `RabbitMQ is blocking publishers: ${blocked.reason}`;
    return new Error(`no confirm within ${this.confirmTimeoutMs} ms (${why}); the message may still arrive, publish it again with the same id`);
  }

  /**
   * The broker refused a message (e.g. its quorum queue has no majority, or a new leader is still
   * being elected). Publishing again at once on the same channel was seen to spin at thousands of
   * nacks a second: drop the channel (the next publish opens a fresh one) and pause every publish
   * of this publisher, longer for each nack until a confirm arrives.
   */
  private onNack(state: ChannelState): void {
    // The other nacks of a batch already published fall inside this pause and do not lengthen it.
    if (Date.now() < this.pausedUntil) return;
    this.nackRun++;
    const pause = Math.min(NACK_PAUSE_MAX_MS, NACK_PAUSE_MS * 2 ** Math.min(this.nackRun - 1, 16));
    this.pausedUntil = Date.now() + Math.round(pause * (0.8 + Math.random() * 0.4));
    if (this.nackRun === 1 || this.nackRun % 50 === 0) {
      this.logger.warn({ nacks: this.nackRun, pauseMs: pause }, 'rabbitmq refused published messages (nack); reopening the channel and pausing publishes');
    }
    void this.state?.then((current) => {
      if (current !== state) return;
      this.state = undefined;
      current.channel.close().catch(() => undefined);
    }, () => undefined);
  }

  private channelState(): Promise<ChannelState> {
    if (!this.state) {
      const pending = this.openChannel();
      this.state = pending;
      pending.catch(() => {
        if (this.state === pending) this.state = undefined;
      });
    }
    return this.state;
  }

  private async openChannel(): Promise<ChannelState> {
    const channel = await this.connection.model.createConfirmChannel();
    coalesceWrites(channel);
    const state: ChannelState = { channel, inFlight: new Set() };
    const current = this.state;
    channel.on('return', (returned: Message) => markReturned(state, returned));
    channel.on('error', (err: Error) => this.logger.warn({ err }, 'publisher channel error'));
    channel.on('close', () => {
      if (this.state === current) this.state = undefined;
    });
    return state;
  }
}

function markReturned(state: ChannelState, returned: Message): void {
  const { exchange, routingKey } = returned.fields;
  const id = returned.properties.messageId as string | undefined;
  const entry = [...state.inFlight].find(
    (e) => e.returned === undefined && e.messageId === id && e.exchange === exchange && e.routingKey === routingKey,
  );
  if (entry) entry.returned = (returned.fields as { replyText?: string }).replyText ?? 'NO_ROUTE';
}

/** The merged headers, or none: an empty table still costs encoding here and decoding in the broker. */
function headersOf(msg: RawOutbound): Record<string, unknown> | undefined {
  if (msg.properties?.headers === undefined && msg.headers === undefined) return undefined;
  const headers = { ...msg.properties?.headers, ...msg.headers };
  return Object.keys(headers).length === 0 ? undefined : headers;
}

const isNack = (err: unknown): boolean => err instanceof Error && err.message === 'message nacked';

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
