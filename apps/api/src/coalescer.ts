/**
 * Coalesces calls made in the same turn of the event loop into one batch call (at most maxBatch
 * items): under load one INSERT carries many requests' job ids; when idle a call runs at once,
 * on the next check phase, so it adds no waiting.
 */
export function coalesce<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch = 500): (item: I) => Promise<O> {
  const queue: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    run(batch.map((b) => b.item)).then(
      (out) => batch.forEach((b, i) => b.resolve(out[i] as O)),
      (err: unknown) => batch.forEach((b) => b.reject(err)),
    );
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      schedule();
    });
}

/** Many-in, many-out wrapper: each caller's items go through the shared coalescer. */
export function coalesceMany<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch?: number): (items: readonly I[]) => Promise<O[]> {
  const one = coalesce(run, maxBatch);
  return (items) => Promise.all(items.map(one));
}

export interface BackgroundBatcher<I> {
  /** Queue items; returns at once. */
  add(items: readonly I[]): void;
  /** Resolves once every item added so far has been run (or its batch has failed and been reported). */
  flush(): Promise<void>;
}

/**
 * Runs work off the caller's path, in batches: items wait at most `delayMs` (or until `maxBatch`
 * are waiting) and then go to `run` together. A failed batch is handed to `onError`, not retried.
 */
export function backgroundBatcher<I>(
  run: (items: I[]) => Promise<void>,
  opts: { delayMs: number; maxBatch: number; onError: (err: unknown, items: readonly I[]) => void },
): BackgroundBatcher<I> {
  const waiting: I[] = [];
  let timer: NodeJS.Timeout | undefined;
  const running = new Set<Promise<void>>();
  const start = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    while (waiting.length > 0) {
      const batch = waiting.splice(0, opts.maxBatch);
      const p = run(batch).catch((err: unknown) => opts.onError(err, batch));
      running.add(p);
      void p.finally(() => running.delete(p));
    }
  };
  return {
    add(items) {
      if (items.length === 0) return;
      waiting.push(...items);
      if (waiting.length >= opts.maxBatch) start();
      else timer ??= setTimeout(start, opts.delayMs);
    },
    async flush() {
      start();
      await Promise.all(running);
    },
  };
}
