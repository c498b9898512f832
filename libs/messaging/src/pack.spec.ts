import { describe, expect, it } from 'vitest';
import { PACK_IDS_HEADER, PACKED_CONTENT_TYPE, packMessages } from './pack.ts';
import type { OutboundMessage } from './types.ts';

const to = (routingKey: string, id: string, extra: Partial<OutboundMessage> = {}): OutboundMessage => ({ exchange: 'x', routingKey, body: { id }, messageId: id, ...extra });
const idsIn = (msg: OutboundMessage): string[] =>
  msg.contentType === PACKED_CONTENT_TYPE ? (msg.headers?.[PACK_IDS_HEADER] as string[]) : [msg.messageId ?? ''];

describe('packMessages: each AMQP message with the inputs it carries', () => {
  it('names, for every message, exactly the inputs inside it, every input once', () => {
    const msgs = [to('a', 'a0'), to('b', 'b0'), to('a', 'a1'), to('a', 'h', { headers: { k: 1 } }), to('a', 'a2'), to('b', 'b1'), to('a', 'a3')];
    const packed = packMessages(msgs, 2);
    for (const p of packed) expect(idsIn(p.msg)).toEqual(p.carries.map((i) => msgs[i]?.messageId));
    expect(packed.flatMap((p) => p.carries).sort()).toEqual(msgs.map((_, i) => i));
    // a0+a1, a2+a3 packed; b0+b1 packed; the message with headers alone.
    expect(packed.map((p) => p.carries)).toEqual([[3], [0, 2], [4, 6], [1, 5]]);
  });

  it('gives each input its own message when packing is off or there is one input', () => {
    const msgs = [to('a', 'a0'), to('a', 'a1')];
    expect(packMessages(msgs, 1)).toEqual([{ msg: msgs[0], carries: [0] }, { msg: msgs[1], carries: [1] }]);
    expect(packMessages(msgs.slice(0, 1), 10)).toEqual([{ msg: msgs[0], carries: [0] }]);
  });
});
