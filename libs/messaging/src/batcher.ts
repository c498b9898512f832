/**
 * Collects items until `maxSize` are buffered or `maxWaitMs` passed since the first, then flushes.
 * Only in a stream, though: an item that comes after a quiet spell (nothing flushed for `maxWaitMs`)
 * goes at the end of this turn of the event loop, with whatever else the turn brought (a packed
 * message's parts, the deliveries of one socket read). So a lone push is not held back, and at a
 * steady rate batches fill for up to `maxWaitMs`, sharing their queries among more items.
 *
 * With `maxConcurrent` (group commit): at most that many flushed batches are being worked on at
 * once (onFlush's promise); while that many are, items wait, and when one ends everything waiting
 * (up to `maxSize`) goes as the next batch at once, without waiting for `maxWaitMs`. While none is,
 * an item goes at the end of the turn, as after a quiet spell; while some (fewer) are, a stream
 * fills the next batch until one ends or `maxWaitMs` passes, whichever is first. So under light
 * load each item goes at once, and under load batches grow to what arrives while one is worked
 * on, so the per-batch work (a query, a status write) is shared by more items.
 */
export class Batcher<T> {
  private buffer: T[] = [];
  /** Cancels the pending flush (a timer, or an immediate after a quiet spell). */
  private cancelPending: (() => void) | undefined;
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  private running = 0;

  constructor(
    private readonly maxSize: number,
    private readonly maxWaitMs: number,
    private readonly onFlush: (items: T[]) => void | Promise<void>,
    private readonly maxConcurrent = Infinity,
  ) {}

  add(item: T): void {
    this.buffer.push(item);
    if (this.running >= this.maxConcurrent) return; // the next batch starts when one ends
    if (this.buffer.length >= this.maxSize || this.maxWaitMs <= 0) return this.flush();
    if (this.cancelPending !== undefined) return;
    // Nothing to wait for: with maxConcurrent, no batch is being worked on; without, a quiet spell.
    const idle = this.maxConcurrent === Infinity ? performance.now() - this.lastFlushAt >= this.maxWaitMs : this.running === 0;
    if (idle) {
      const immediate = setImmediate(() => this.flush());
      this.cancelPending = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(() => this.flush(), this.maxWaitMs);
      this.cancelPending = () => clearTimeout(timer);
    }
  }

  flush(): void {
    this.cancel();
    if (this.buffer.length === 0 || this.running >= this.maxConcurrent) return;
    this.lastFlushAt = performance.now();
    const items = this.buffer.length <= this.maxSize ? this.buffer : this.buffer.slice(0, this.maxSize);
    this.buffer = this.buffer.length <= this.maxSize ? [] : this.buffer.slice(this.maxSize);
    if (this.maxConcurrent === Infinity) {
      void this.onFlush(items);
      return;
    }
    this.running++;
    void Promise.resolve(this.onFlush(items)).finally(() => {
      this.running--;
      this.flush();
    });
  }

  /** Empties the buffer without flushing; returns what was in it. */
  drain(): T[] {
    this.cancel();
    const items = this.buffer;
    this.buffer = [];
    return items;
  }

  private cancel(): void {
    this.cancelPending?.();
    this.cancelPending = undefined;
  }

  /** Drops buffered items matching `predicate` (e.g. deliveries from a channel that died); returns how many. */
  discard(predicate: (item: T) => boolean): number {
    const before = this.buffer.length;
    this.buffer = this.buffer.filter((item) => !predicate(item));
    return before - this.buffer.length;
  }
}
