import { randomUUID } from 'node:crypto';
import type { OutboundMessage } from './types.ts';

/**
 * Packed messages (ADR 0016): several JSON bodies bound for the same queue travel as one AMQP
 * message, one body per line, so the broker's per-message cost (routing, the quorum log, the
 * confirm, the delivery and its ack) is paid once for all of them. Only the transport is packed:
 * the consumer splits a packed message before its handler sees it, each part is settled on its
 * own (a part's retry or park is a copy of that part alone, an ordinary message), and the packed
 * message is acked once every part is settled.
 */
export const PACKED_CONTENT_TYPE = 'application/x-ndjson';
/** The parts' message ids, in order (each part's own id: the push id for device pushes). */
export const PACK_IDS_HEADER = 'x-herald-pack-ids';

const NEWLINE = 0x0a;

interface Packable {
  msg: OutboundMessage;
  content: Buffer;
  /** Its place in the input. */
  index: number;
}

/** An AMQP message to send and the inputs it carries (their indices in packMessages' input). */
export interface Packed {
  msg: OutboundMessage;
  carries: number[];
}

/** A message that can share an envelope: JSON, no headers or expiry of its own, and no raw newline in its text. */
function packable(msg: OutboundMessage, index: number): Packable | undefined {
  if (msg.headers !== undefined || msg.expirationMs !== undefined) return undefined;
  if (Buffer.isBuffer(msg.body)) {
    if (msg.contentType !== 'application/json' || msg.body.includes(NEWLINE)) return undefined;
    return { msg, content: msg.body, index };
  }
  // JSON.stringify escapes every newline inside strings, so its text has none.
  return { msg, content: Buffer.from(JSON.stringify(msg.body)), index };
}

/**
 * Messages to the same exchange and routing key, packed `maxParts` at a time, in order within each
 * queue; a message that cannot be packed, or would be alone, goes as it is. Each AMQP message comes
 * with the inputs it carries, so a publisher can settle each input by its own message's confirm.
 */
export function packMessages(msgs: readonly OutboundMessage[], maxParts: number): Packed[] {
  if (maxParts <= 1 || msgs.length <= 1) return msgs.map((msg, i) => ({ msg, carries: [i] }));
  const out: Packed[] = [];
  const groups = new Map<string, Packable[]>();
  msgs.forEach((msg, index) => {
    const p = packable(msg, index);
    if (p === undefined) {
      out.push({ msg, carries: [index] });
      return;
    }
    const key = `${msg.exchange}\u0000${msg.routingKey}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [p]);
    else group.push(p);
  });
  for (const group of groups.values()) {
    for (let at = 0; at < group.length; at += maxParts) {
      const parts = group.slice(at, at + maxParts);
      out.push({ msg: parts.length === 1 ? (parts[0] as Packable).msg : envelope(parts), carries: parts.map((p) => p.index) });
    }
  }
  return out;
}

function envelope(parts: Packable[]): OutboundMessage {
  const first = (parts[0] as Packable).msg;
  const lines: Buffer[] = [];
  parts.forEach((p, i) => {
    if (i > 0) lines.push(Buffer.from([NEWLINE]));
    lines.push(p.content);
  });
  return {
    exchange: first.exchange,
    routingKey: first.routingKey,
    body: Buffer.concat(lines),
    contentType: PACKED_CONTENT_TYPE,
    headers: { [PACK_IDS_HEADER]: parts.map((p) => p.msg.messageId ?? '') },
    messageId: `pack-${randomUUID()}`,
  };
}

export interface Part {
  body: Buffer;
  messageId: string | undefined;
}

/** The parts of a packed message's body (lines), each with its message id from PACK_IDS_HEADER when it has one. */
export function unpack(content: Buffer, ids: unknown): Part[] {
  const names = Array.isArray(ids) ? ids : [];
  const parts: Part[] = [];
  let start = 0;
  for (let i = 0; start <= content.length; i++) {
    const end = content.indexOf(NEWLINE, start);
    const stop = end === -1 ? content.length : end;
    const name: unknown = names[i];
    parts.push({ body: content.subarray(start, stop), messageId: typeof name === 'string' && name !== '' ? name : undefined });
    if (end === -1) break;
    start = end + 1;
  }
  return parts;
}

/** Whether a delivered message is packed. */
export const isPacked = (contentType: string | undefined, headers: Record<string, unknown>): boolean =>
  contentType === PACKED_CONTENT_TYPE && headers[PACK_IDS_HEADER] !== undefined;
