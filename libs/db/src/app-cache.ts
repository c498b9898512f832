import type { AppRow } from './app-repository.ts';

export interface AppCache<T = AppRow | undefined> {
  get(id: string): Promise<T>;
}

/**
 * Caches app lookups (the app's row, or another answer about the app), misses included, for
 * `ttlMs`; concurrent lookups of one id share one query. A failed lookup is not cached.
 */
const SWEEP_AT = 1000;

function sweep(entries: Map<string, { expiresAt: number }>, at: number): void {
  for (const [id, entry] of entries) if (entry.expiresAt <= at) entries.delete(id);
}

export function createAppCache<T = AppRow | undefined>(repo: { get(id: string): Promise<T> }, ttlMs: number, now = Date.now): AppCache<T> {
  const entries = new Map<string, { expiresAt: number; value: Promise<T> }>();
  return {
    get(id) {
      const hit = entries.get(id);
      if (hit !== undefined && hit.expiresAt > now()) return hit.value;
      if (entries.size >= SWEEP_AT) sweep(entries, now());
      const value = repo.get(id);
      const entry = { expiresAt: now() + ttlMs, value };
      entries.set(id, entry);
      value.catch(() => {
        if (entries.get(id) === entry) entries.delete(id);
      });
      return value;
    },
  };
}
