import type { Channel, ConsumeMessage } from 'amqplib';

/**
 * A delivery this channel still holds: waiting for its ack, acked (not yet sent), or settled on
 * the wire. A settled one keeps its tag only: behind a delivery held for long (its ack waiting for
 * a publish RabbitMQ blocks in an alarm) settled entries pile up, and must not keep their bodies.
 */
interface Held {
  tag: number;
  msg: ConsumeMessage | undefined;
  state: 'held' | 'acked' | 'settled';
}

/**
 * The acks of one consumer channel, sent as few frames as possible: acks made in one tick go out
 * at the end of it, and a run of acked deliveries at the head of the channel's unsettled ones
 * (delivery tags are handed out in order) is one `basic.ack` with `multiple` set instead of one
 * frame each — for the broker one settle of many messages. An ack behind a delivery still being
 * worked on is sent alone at the end of the tick, so no ack waits for another message's work.
 * Nothing is acked before the caller says so: multiple-ack covers only tags acked here or
 * already settled (nacked) on the wire.
 */
export class AckWindow {
  /** In delivery order (tags rise), so the head is the oldest unsettled delivery. */
  private readonly held: Held[] = [];
  private readonly byTag = new Map<number, Held>();
  private head = 0;
  private flushQueued = false;
  /** Acked since the last flush: those behind the head are sent alone, found without a walk of the whole window. */
  private readonly ackedSinceFlush = new Set<Held>();

  constructor(private readonly channel: Channel) {}

  /** Every delivery is registered as it arrives, before any of its settlement. */
  delivered(msg: ConsumeMessage): void {
    const entry: Held = { tag: msg.fields.deliveryTag, msg, state: 'held' };
    this.held.push(entry);
    this.byTag.set(msg.fields.deliveryTag, entry);
  }

  ack(msg: ConsumeMessage): void {
    const entry = this.byTag.get(msg.fields.deliveryTag);
    if (entry === undefined || entry.state !== 'held') return;
    entry.state = 'acked';
    this.ackedSinceFlush.add(entry);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // After the promise jobs of this tick: the acks of a whole settled batch go out together.
      process.nextTick(() => this.flush());
    }
  }

  /** Nacks go out at once (rare: shutdown, back-off); the entry then counts as settled. */
  nack(msg: ConsumeMessage, requeue: boolean): void {
    const entry = this.byTag.get(msg.fields.deliveryTag);
    if (entry === undefined || entry.state === 'settled') return;
    if (entry.state === 'acked') {
      // Already acked by the handler's outcome: that ack stands (it goes out with the next flush).
      return;
    }
    this.forget(entry);
    this.trimHead();
    this.channel.nack(msg, false, requeue);
  }

  /** Deliveries not yet settled on the wire (held, or acked and waiting for the end of the tick). */
  get unsettled(): number {
    return this.byTag.size;
  }

  flush(): void {
    this.flushQueued = false;
    let lastAcked: Held | undefined;
    let i = this.head;
    for (; i < this.held.length; i++) {
      const entry = this.held[i] as Held;
      if (entry.state === 'held') break;
      if (entry.state === 'acked') lastAcked = entry;
    }
    const multiple = lastAcked?.msg;
    for (let j = this.head; j < i; j++) this.forget(this.held[j] as Held);
    this.head = i;
    // Acks behind a delivery still held: one frame each, now.
    const single: ConsumeMessage[] = [];
    for (const entry of this.ackedSinceFlush) {
      if (entry.state !== 'acked' || entry.msg === undefined) continue;
      single.push(entry.msg);
      this.forget(entry);
    }
    this.ackedSinceFlush.clear();
    this.compact();
    try {
      if (multiple !== undefined) this.channel.ack(multiple, true);
      for (const msg of single) this.channel.ack(msg, false);
    } catch {
      // The channel closed meanwhile: the broker requeues its unsettled messages anyway.
    }
  }

  private trimHead(): void {
    while (this.head < this.held.length && (this.held[this.head] as Held).state === 'settled') this.head++;
    this.compact();
  }

  private forget(entry: Held): void {
    this.byTag.delete(entry.tag);
    entry.state = 'settled';
    entry.msg = undefined;
  }

  /** Drop the settled head from the array now and then, so it does not grow with the channel's life. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.held.length) {
      this.held.splice(0, this.head);
      this.head = 0;
    }
  }
}
