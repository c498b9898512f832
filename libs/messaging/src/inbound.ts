import type { ConsumeMessage } from 'amqplib';
import { attemptOf } from './headers.ts';
import type { InboundMessage } from './types.ts';

export function toInbound(msg: ConsumeMessage, queue: string): InboundMessage {
  const headers: Record<string, unknown> = { ...(msg.properties.headers ?? {}) };
  const messageId = msg.properties.messageId as string | undefined;
  return {
    body: msg.content,
    headers,
    routingKey: msg.fields.routingKey,
    messageId,
    redelivered: msg.fields.redelivered,
    attempt: attemptOf(headers),
    queue,
  };
}
