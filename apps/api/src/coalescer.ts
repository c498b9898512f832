/**
 * Coalesces calls made in the same turn of the event loop into one batch call: under load one
 * INSERT carries many requests' job ids; when idle a call runs at once, on the next check phase,
 * so it adds no waiting. A batch takes callers while their items total at most maxBatch, and one
 * caller's items are never split between batches (a caller with more goes alone): a failed batch
 * fails each of its callers whole, so a request's job ids are recorded all together or not at all.
 */
export function coalesceMany<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch = 500): (items: readonly I[]) => Promise<O[]> {
  const queue: Array<{ items: readonly I[]; resolve: (o: O[]) => void; reject: (e: unknown) => void }> = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    let taken = 1;
    let size = queue[0]?.items.length ?? 0;
    for (let next = queue[taken]; next !== undefined && size + next.items.length <= maxBatch; next = queue[taken]) {
      size += next.items.length;
      taken += 1;
    }
    const batch = queue.splice(0, taken);
    if (queue.length > 0) schedule();
    run(batch.flatMap((b) => b.items)).then(
      (out) => {
        let at = 0;
        for (const b of batch) b.resolve(out.slice(at, (at += b.items.length)));
      },
      (err: unknown) => batch.forEach((b) => b.reject(err)),
    );
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  return (items) =>
    items.length === 0
      ? Promise.resolve([])
      : new Promise<O[]>((resolve, reject) => {
          queue.push({ items, resolve, reject });
          schedule();
        });
}

/** One item a call: coalesceMany's batches, each caller getting its own answer. */
export function coalesce<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch?: number): (item: I) => Promise<O> {
  const many = coalesceMany(run, maxBatch);
  return async (item) => (await many([item]))[0] as O;
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
