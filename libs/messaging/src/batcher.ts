/** Collects items until `maxSize` are buffered or `maxWaitMs` passed since the first, then flushes. */
export class Batcher<T> {
  private buffer: T[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly maxSize: number,
    private readonly maxWaitMs: number,
    private readonly onFlush: (items: T[]) => void,
  ) {}

  add(item: T): void {
    this.buffer.push(item);
    if (this.buffer.length >= this.maxSize || this.maxWaitMs <= 0) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    const items = this.buffer;
    this.buffer = [];
    this.onFlush(items);
  }

  /** Empties the buffer without flushing; returns what was in it. */
  drain(): T[] {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const items = this.buffer;
    this.buffer = [];
    return items;
  }

  /** Drops buffered items matching `predicate` (e.g. deliveries from a channel that died). */
  discard(predicate: (item: T) => boolean): void {
    this.buffer = this.buffer.filter((item) => !predicate(item));
  }
}
