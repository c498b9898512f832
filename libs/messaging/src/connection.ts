import { connect, type RecoveringChannelModel } from 'amqplib';
import type { Logger } from '@herald/logging';
import { BrokerConnectError } from './errors.ts';

/**
 * A RabbitMQ connection that re-opens itself after it is lost (amqplib's built-in recovery).
 * Channels are not recovered; their owners re-create them (see consumer.ts, publisher.ts).
 */
export interface BrokerConnection {
  readonly model: RecoveringChannelModel;
  /** False between a disconnect and the next successful reconnect. */
  isConnected(): boolean;
  isClosed(): boolean;
  close(): Promise<void>;
}

/** The URL with its password replaced, fit for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable AMQP URL]';
  }
}

/** Opens the connection; the first failure rejects at once (fail fast), later losses are recovered. */
export async function openConnection(url: string, connectionName: string, logger: Logger): Promise<BrokerConnection> {
  let model: RecoveringChannelModel;
  try {
    model = await connect(url, {
      clientProperties: { connection_name: connectionName },
      // Nagle's algorithm off: a publish or ack written while an earlier frame is unacknowledged
      // would otherwise wait for the peer's delayed ACK (up to 40 ms on Linux) before leaving.
      noDelay: true,
      // At most 5 s between attempts: after a broker restart, consumers are back within 5 s of it.
      recovery: { initialMaxRetries: 0, maxRetries: Infinity, initialDelay: 250, maxDelay: 5_000 },
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new BrokerConnectError(`cannot connect to RabbitMQ at ${redactUrl(url)}: ${reason}`, { cause: err });
  }
  return trackConnection(model, connectionName, logger);
}

function trackConnection(model: RecoveringChannelModel, connectionName: string, logger: Logger): BrokerConnection {
  let connected = true;
  let closed = false;
  model.on('disconnect', (err: Error) => {
    connected = false;
    logger.warn({ err, connectionName }, 'rabbitmq connection lost; recovering');
  });
  model.on('connect', () => {
    connected = true;
    logger.info({ connectionName }, 'rabbitmq connection recovered');
  });
  model.on('reconnect-scheduled', (info: { attempt: number; delay: number; error: Error }) =>
    logger.warn({ attempt: info.attempt, delayMs: info.delay, err: info.error }, 'rabbitmq reconnect scheduled'),
  );
  model.on('reconnect-failed', (err: Error) => logger.error({ err, connectionName }, 'rabbitmq recovery gave up'));
  model.on('error', (err: Error) => logger.warn({ err, connectionName }, 'rabbitmq connection error'));
  model.on('blocked', (reason: string) => logger.warn({ reason, connectionName }, 'rabbitmq blocked publishing'));
  model.on('unblocked', () => logger.info({ connectionName }, 'rabbitmq unblocked publishing'));
  model.on('handler-error', (err: Error, event: string) => logger.error({ err, event }, 'error in rabbitmq event listener'));
  return {
    model,
    isConnected: () => connected && !closed,
    isClosed: () => closed,
    close: async () => {
      closed = true;
      connected = false;
      await model.close();
    },
  };
}
