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

