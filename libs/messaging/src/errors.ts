/** The first connection to RabbitMQ failed: wrong URL, credentials, vhost, or the broker is down. */
export class BrokerConnectError extends Error {
  override name = 'BrokerConnectError';
}

/** The broker is not connected right now (it is recovering); the publish was not attempted. */
export class BrokerUnavailableError extends Error {
  override name = 'BrokerUnavailableError';
}

/** A mandatory publish matched no queue: the exchange has no binding for the routing key. */
export class UnroutableError extends Error {
  override name = 'UnroutableError';
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    replyText: string,
  ) {
    super(`message to exchange "${exchange}" with routing key "${routingKey}" was unroutable (${replyText})`);
  }
}

/** The broker refused or lost the message (nack, or the channel closed before the confirm). */
export class PublishFailedError extends Error {
  override name = 'PublishFailedError';
}
