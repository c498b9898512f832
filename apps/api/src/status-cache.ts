/** A status read shorter than this is not kept: asked again, it is read again. */
const KEEP_FROM_MS = 250;
/** A kept status is kept ten times as long as it took to read, at most this long. */
const MAX_KEEP_MS = 30_000;
/** Most statuses kept at once; past it the oldest go first. */
const MAX_KEPT = 10_000;

interface Kept<T> {
  at: number;
  tookMs: number;
  reading: Promise<T>;
}

/**
 * A job's status as GET /v1/jobs/:id reads it, counted over all its push outcomes in one statement:
 * a few milliseconds for a job to one user, seconds for a broadcast of millions, which a team's
 * progress bar asked every second, each request a new count. Requests for the same job at once
 * share one read, and a read that took a while (KEEP_FROM_MS) of a status `keep` says is worth
 * keeping (a large job's: a small one's slow read is a stall, not its count) is answered again for
 * ten times as long as it took (at most MAX_KEEP_MS): a status that adds up, at most that old, and
 * PostgreSQL counting a broadcast at most a tenth of the time whoever asks.
 */
export function cachedStatus<T>(read: (id: string) => Promise<T>, keep: (status: T) => boolean = () => true, now: () => number = Date.now): { read(id: string): Promise<T>; forget(id: string): void } {
  const kept = new Map<string, Kept<T>>();
  const fresh = (k: Kept<T>, at: number): boolean => k.tookMs < 0 || (k.tookMs >= KEEP_FROM_MS && at - k.at < Math.min(MAX_KEEP_MS, k.tookMs * 10));
  const cachedRead = (id: string): Promise<T> => {
    const at = now();
    const found = kept.get(id);
    if (found !== undefined && fresh(found, at)) return found.reading;
    if (kept.size >= MAX_KEPT) {
      for (const [key, k] of kept) if (!fresh(k, at)) kept.delete(key);
      if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value as string);
    }
    // tookMs < 0 while the read is under way: it is shared.
    const entry: Kept<T> = { at, tookMs: -1, reading: read(id) };
    kept.set(id, entry);
    entry.reading.then(
      (status) => {
        // Kept from when the read was done.
        entry.at = now();
        entry.tookMs = entry.at - at;
        if ((entry.tookMs < KEEP_FROM_MS || !keep(status)) && kept.get(id) === entry) kept.delete(id);
      },
      () => {
        if (kept.get(id) === entry) kept.delete(id);
      },
    );
    return entry.reading;
  };
  // A cancel here is seen at once by the status asked here next (another replica's kept one may be older).
  return { read: cachedRead, forget: (id) => void kept.delete(id) };
}
