import { connect, type RecoveringChannelModel } from 'amqplib';
import type { Logger } from '@herald/logging';
import { BrokerRotation, brokerUrls } from './broker-list.ts';
import { BrokerConnectError } from './errors.ts';

/**
 * A RabbitMQ connection that re-opens itself after it is lost (amqplib's built-in recovery).
 * Channels are not recovered; their owners re-create them (see consumer.ts, publisher.ts).
 */
export interface BrokerConnection {
  readonly model: RecoveringChannelModel;
  /** The name it carries in RabbitMQ (connection_name). */
  readonly name: string;
  /** False between a disconnect and the next successful reconnect. */
  isConnected(): boolean;
  /** When the connection was lost (epoch ms), while it is being re-opened; undefined while connected or closed. */
  lostSince(): number | undefined;
  isClosed(): boolean;
  /** Whether RabbitMQ is blocking this connection's publishes (connection.blocked: a memory or disk alarm): why, and since when (epoch ms). */
  blocked(): { reason: string; since: number } | undefined;
  close(): Promise<void>;
}

/** The URL (or each URL of a list) with its password replaced, fit for logs and error messages. */
export function redactUrl(url: string): string {
  if (url.includes(',')) return url.split(',').map((u) => redactUrl(u.trim())).join(',');
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable AMQP URL]';
  }
}

/**
 * Opens the connection to one broker or to the first live node of a list (`url` may be a
 * comma-separated list, see broker-list.ts). The first attempt tries each node once and rejects
 * if none answers (fail fast); after that, a lost connection is re-opened on the next node at
 * once, then with back-off up to 5 s, for as long as it takes.
 */
export async function openConnection(url: string, connectionName: string, logger: Logger): Promise<BrokerConnection> {
  const urls = brokerUrls(url);
  const rotation = new BrokerRotation(urls);
  let model: RecoveringChannelModel;
  try {
    model = await connect(urls.length === 1 ? url : rotation.target(), {
      clientProperties: { connection_name: connectionName },
      // Nagle's algorithm off: a publish or ack written while an earlier frame is unacknowledged
      // would otherwise wait for the peer's delayed ACK (up to 40 ms on Linux) before leaving.
      noDelay: true,
      recovery: {
        initialMaxRetries: urls.length - 1,
        maxRetries: Infinity,
        calculateDelay: (attempt: number) => rotation.next(attempt),
      },
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new BrokerConnectError(`cannot connect to RabbitMQ at ${redactUrl(url)}: ${reason}`, { cause: err });
  }
  return trackConnection(model, connectionName, logger, rotation);
}

function trackConnection(model: RecoveringChannelModel, connectionName: string, logger: Logger, rotation: BrokerRotation): BrokerConnection {
  let connected = true;
  let lostAt: number | undefined;
  let closed = false;
  let blocked: { reason: string; since: number } | undefined;
  model.on('disconnect', (err: Error) => {
    connected = false;
    lostAt ??= Date.now();
    blocked = undefined;
    logger.warn({ err, connectionName }, 'rabbitmq connection lost; recovering');
  });
  model.on('connect', () => {
    connected = true;
    lostAt = undefined;
    logger.info({ connectionName, broker: redactUrl(rotation.current) }, 'rabbitmq connection recovered');
  });
  model.on('reconnect-scheduled', (info: { attempt: number; delay: number; error: Error }) =>
    logger.warn({ attempt: info.attempt, delayMs: info.delay, err: info.error, next: redactUrl(rotation.current) }, 'rabbitmq reconnect scheduled'),
  );
  model.on('reconnect-failed', (err: Error) => logger.error({ err, connectionName }, 'rabbitmq recovery gave up'));
  model.on('error', (err: Error) => logger.warn({ err, connectionName }, 'rabbitmq connection error'));
  model.on('blocked', (reason: string) => {
    blocked = { reason, since: Date.now() };
    logger.warn({ reason, connectionName }, 'rabbitmq blocked publishing');
  });
  model.on('unblocked', () => {
    blocked = undefined;
    logger.info({ connectionName }, 'rabbitmq unblocked publishing');
  });
  model.on('handler-error', (err: Error, event: string) => logger.error({ err, event }, 'error in rabbitmq event listener'));
  return {
    model,
    name: connectionName,
    isConnected: () => connected && !closed,
    isClosed: () => closed,
    lostSince: () => (closed ? undefined : lostAt),
    blocked: () => blocked,
    close: async () => {
      closed = true;
      connected = false;
      await model.close();
    },
  };
}
