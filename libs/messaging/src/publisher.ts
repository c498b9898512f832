import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import type { Logger } from '@herald/logging';
import { coalesceWrites } from './coalesce-writes.ts';
import type { BrokerConnection } from './connection.ts';
import { BrokerUnavailableError, PublishFailedError, UnroutableError } from './errors.ts';
import type { MessagingMetrics } from './metrics.ts';
import type { OutboundMessage, Publisher } from './types.ts';

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

/**
 * Publishes on one confirm channel, persistent and mandatory. A mandatory message that matches
 * no queue comes back as basic.return before its confirm; the return is matched to its publish by
 * message id, exchange and routing key (every message gets a message id).
 */
export class ConfirmPublisher implements Publisher {
  private state: Promise<ChannelState> | undefined;

  constructor(
    private readonly connection: BrokerConnection,
    private readonly metrics: MessagingMetrics,
    private readonly logger: Logger,
  ) {}

  publish(msg: OutboundMessage): Promise<void> {
    return this.publishMany([msg]);
  }

  async publishMany(msgs: readonly RawOutbound[]): Promise<void> {
    if (msgs.length === 0) return;
    if (!this.connection.isConnected()) {
      throw new BrokerUnavailableError('not connected to RabbitMQ (recovering); message not published');
    }
    const state = await this.channelState();
    const results = await Promise.allSettled(msgs.map((m) => this.send(state, m)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
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

  private send(state: ChannelState, msg: RawOutbound): Promise<void> {
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
      const done = (err: unknown): void => {
        state.inFlight.delete(entry);
        if (err) return reject(new PublishFailedError(`publish to "${msg.exchange}" not confirmed: ${describe(err)}`, { cause: err }));
        if (entry.returned !== undefined) return reject(new UnroutableError(msg.exchange, msg.routingKey, entry.returned));
        this.metrics.published.inc({ exchange: msg.exchange });
        resolve();
      };
      try {
        state.channel.publish(msg.exchange, msg.routingKey, content, options, done);
      } catch (err) {
        done(err);
      }
    });
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

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
