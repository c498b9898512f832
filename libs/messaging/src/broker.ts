import type { Channel } from 'amqplib';
import { delayQueueFor } from '@herald/contracts';
import { RELAY_PREFETCH, relayHandler } from './delay-relay.ts';
import { delayQueuesOf } from './retry.ts';
import { mergeTopologies, parkedQueueSpec, retryTopology, type Topology } from './topology.ts';
import { openConnection, type BrokerConnection } from './connection.ts';
import { QueueConsumer } from './consumer.ts';
import { brokerUrls } from './broker-list.ts';
import { declareTopology, placementFor, type QueuePlacement } from './declare-topology.ts';
import { createMetrics, type MessagingMetrics } from './metrics.ts';
import { ConfirmPublisher } from './publisher.ts';
import { Settler } from './settle.ts';
import type { Broker, BrokerHealth, BrokerOptions, ConsumeOptions, Consumer, QueueCounts } from './types.ts';
import type { Logger } from '@herald/logging';

const STOP_ON_CLOSE_MS = 5_000;

/** The name of a consuming process's second connection, which carries everything but its publishes. */
export const consumingConnectionName = (connectionName: string): string => `${connectionName}.consume`;

/**
 * Connects to RabbitMQ; rejects at once with BrokerConnectError if the first attempt fails.
 *
 * Publishes go on a connection of their own (named `connectionName`); consumers, delay relays,
 * declarations and queue probes on a second one (`consumingConnectionName`). In a memory or disk
 * alarm RabbitMQ stops reading from every connection that publishes: on one shared connection the
 * consumers' acks would wait with the publishes, and the queues whose draining ends the alarm would
 * stop draining (RabbitMQ's documentation advises separate connections for this reason). A process
 * that never consumes (`consumes: false`) keeps to one connection.
 */
export async function connectBroker(opts: BrokerOptions): Promise<Broker> {
  const logger = opts.logger.child({ component: 'messaging', connectionName: opts.connectionName });
  const publishing = await openConnection(opts.url, opts.connectionName, logger);
  let consuming: BrokerConnection | undefined;
  if (opts.consumes !== false) {
    const name = consumingConnectionName(opts.connectionName);
    try {
      consuming = await openConnection(opts.url, name, opts.logger.child({ component: 'messaging', connectionName: name }));
    } catch (err) {
      await publishing.close().catch(() => undefined);
      throw err;
    }
  }
  return new RabbitBroker(publishing, consuming, createMetrics(opts.metrics), logger, placementFor(brokerUrls(opts.url).length), relayHandler(opts.relayMaxHoldMs), opts.confirmTimeoutMs);
}

class RabbitBroker implements Broker {
  readonly publisher: ConfirmPublisher;
  private readonly consumers = new Set<QueueConsumer>();
  /** One relay per delay queue this process uses (delay-relay.ts), started with the first consumer that needs it. */
  private readonly relays = new Map<string, Promise<QueueConsumer>>();
  /** The relays that have started (their subscriptions are watched by health()). */
  private readonly runningRelays = new Set<QueueConsumer>();
  private readonly unwatchPublishing: () => void;

  constructor(
    private readonly publishing: BrokerConnection,
    /** Undefined when opened with `consumes: false`. */
    private readonly consuming: BrokerConnection | undefined,
    private readonly metrics: MessagingMetrics,
    private readonly logger: Logger,
    private readonly placement: QueuePlacement,
    private readonly relayHandle: ConsumeOptions['handle'],
    confirmTimeoutMs: number | undefined,
  ) {
    this.publisher = new ConfirmPublisher(publishing, metrics, logger, confirmTimeoutMs);
    this.unwatchPublishing = metrics.watchPublishing(publishing);
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    validate(options);
    const connection = this.consumingConnection();
    await this.applyTopology(mergeTopologies(retryTopology(options.retryDelaysMs), { exchanges: [], queues: [parkedQueueSpec(options.queue)] }));
    const settler = new Settler(options.queue, options.retryDelaysMs, this.publisher, this.metrics, this.logger);
    const consumer = new QueueConsumer(options, { connection, settler, metrics: this.metrics, logger: this.logger });
    await Promise.all(delayQueuesOf(options.retryDelaysMs).map((d) => this.relay(delayQueueFor(d), connection)));
    await consumer.start();
    this.consumers.add(consumer);
    return { queue: consumer.queue, stop: (timeoutMs) => consumer.stop(timeoutMs).finally(() => this.consumers.delete(consumer)) };
  }

  async applyTopology(topology: Topology): Promise<void> {
    // Short-lived channels, so a failed declaration cannot take a consumer or the publisher down.
    await declareTopology(() => this.openChannel('topology channel error'), topology, this.placement);
  }

  async queueCounts(queues: readonly string[]): Promise<Map<string, QueueCounts>> {
    const counts = new Map<string, QueueCounts>();
    let channel = await this.openChannel('queue probe channel error');
    try {
      for (const queue of queues) {
        try {
          const { messageCount, consumerCount } = await channel.checkQueue(queue);
          counts.set(queue, { ready: messageCount, consumers: consumerCount });
        } catch {
          // A missing queue closes the channel (404); carry on with the rest on a new one.
          channel = await this.openChannel('queue probe channel error');
        }
      }
    } finally {
      await channel.close().catch(() => undefined);
    }
    return counts;
  }

  health(): BrokerHealth {
    const problems: string[] = [];
    for (const connection of this.consuming === undefined ? [this.publishing] : [this.publishing, this.consuming]) {
      const lost = connection.lostSince();
      if (lost !== undefined) problems.push(`RabbitMQ connection "${connection.name}" lost at ${new Date(lost).toISOString()}; reconnecting`);
    }
    for (const consumer of [...this.consumers, ...this.runningRelays]) {
      const lost = consumer.unsubscribedSince();
      if (lost !== undefined) problems.push(`not consuming from "${consumer.queue}" since ${new Date(lost).toISOString()}; re-subscribing`);
    }
    return { ready: problems.length === 0, problems };
  }

  async close(): Promise<void> {
    const relays = await Promise.all([...this.relays.values()].map((r) => r.catch(() => undefined)));
    await Promise.all([...this.consumers, ...relays].map((c) => c?.stop(STOP_ON_CLOSE_MS)));
    this.unwatchPublishing();
    // The consuming connection first: a publishing one that RabbitMQ blocks (an alarm) can hold its close.
    await this.consuming?.close();
    // Blocked, a channel's close waits for an answer RabbitMQ does not send before the alarm ends
    // (a client library's close() hung for the whole alarm): the connection's close, which amqplib
    // ends at once when blocked, takes the channel with it, and the half-closed socket is destroyed
    // (as the parked replay's copies connection is, parked.ts).
    const blocked = this.publishing.blocked() !== undefined;
    const socket = blocked ? await this.publisher.socket() : undefined;
    if (!blocked) await this.publisher.close();
    await this.publishing.close();
    socket?.destroy();
  }

  private consumingConnection(): BrokerConnection {
    if (this.consuming === undefined) throw new Error('this broker was opened with consumes: false; it cannot consume');
    return this.consuming;
  }

  /**
   * Relays a delay queue back to the queues its messages came from. Every process that consumes
   * with a delay relays that delay queue (competing consumers), so any of them sends a message
   * back when it is due; one that stops gives its waiting messages back to the queue.
   */
  private relay(queue: string, connection: BrokerConnection): Promise<QueueConsumer> {
    let started = this.relays.get(queue);
    if (started === undefined) {
      const options = {
        queue,
        prefetch: RELAY_PREFETCH,
        retryDelaysMs: [],
        batch: { maxSize: 1, maxWaitMs: 0, maxConcurrent: RELAY_PREFETCH },
        // No delivery limit: a relay gives a message back for the infrastructure's sake (a process
        // stopping or dying, the queue it goes back to refusing it), never for the message's own;
        // parked here, beside a delay queue, no onParked of its own queue's consumer heard of it,
        // and its push read in flight for good.
        deliveryLimit: Number.POSITIVE_INFINITY,
        handle: this.relayHandle,
      };
      const settler = new Settler(queue, [], this.publisher, this.metrics, this.logger);
      const relay = new QueueConsumer(options, { connection, settler, metrics: this.metrics, logger: this.logger });
      started = relay.start().then(() => {
        this.runningRelays.add(relay);
        return relay;
      });
      started.catch(() => this.relays.delete(queue));
      this.relays.set(queue, started);
    }
    return started;
  }

  private async openChannel(errorMessage: string): Promise<Channel> {
    // Declarations and probes: on the consuming connection, or the only one.
    const channel = await (this.consuming ?? this.publishing).model.createChannel();
    channel.on('error', (err: Error) => this.logger.debug({ err }, errorMessage));
    return channel;
  }
}

function validate(options: ConsumeOptions): void {
  const problems: string[] = [];
  if (!Number.isInteger(options.prefetch) || options.prefetch < 1) problems.push('prefetch must be an integer ≥ 1');
  if (options.maxInFlight !== undefined && (!Number.isInteger(options.maxInFlight) || options.maxInFlight < 1)) problems.push('maxInFlight must be an integer ≥ 1');
  // Not bounded by prefetch: a packed message (pack.ts) brings several deliveries.
  if (options.batch && options.batch.maxSize < 1) {
    problems.push('batch.maxSize must be at least 1');
  }
  if (options.retryDelaysMs.some((d) => !Number.isFinite(d) || d <= 0)) problems.push('retryDelaysMs must be positive numbers');
  if (options.deliveryLimit !== undefined && (!Number.isInteger(options.deliveryLimit) || options.deliveryLimit < 1)) problems.push('deliveryLimit must be an integer ≥ 1');
  if (problems.length > 0) throw new Error(`invalid consume options for queue "${options.queue}": ${problems.join('; ')}`);
}
