/**
 * Collects items until `maxSize` are buffered or `maxWaitMs` passed since the first, then flushes.
 *
 * With `maxConcurrent` (group commit): at most that many flushed batches are being worked on at
 * once (onFlush's promise); while that many are, items wait, and when one ends everything waiting
 * (up to `maxSize`) goes as the next batch at once, without waiting for `maxWaitMs`. Under light
 * load each item goes alone and at once; under heavy load batches grow to what arrives while one
 * is worked on, so the per-batch work (a query, a status write) is shared by more items.
 */
export class Batcher<T> {
  private buffer: T[] = [];
  private timer: NodeJS.Timeout | undefined;
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
    this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0 || this.running >= this.maxConcurrent) return;
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
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const items = this.buffer;
    this.buffer = [];
    return items;
  }

  /** Drops buffered items matching `predicate` (e.g. deliveries from a channel that died); returns how many. */
  discard(predicate: (item: T) => boolean): number {
    const before = this.buffer.length;
    this.buffer = this.buffer.filter((item) => !predicate(item));
    return before - this.buffer.length;
  }
}
