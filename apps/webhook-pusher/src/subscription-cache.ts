import type { SubscriptionRow } from '@herald/db';

export interface SubscriptionSource {
  getMany(ids: readonly string[]): Promise<Map<string, SubscriptionRow>>;
}

/** Subscriptions by id for ttlMs (a missing one too), loading a batch's misses with one query. */
export function createSubscriptionCache(source: SubscriptionSource, ttlMs: number, now = Date.now) {
  const cache = new Map<string, { until: number; row: SubscriptionRow | undefined }>();
  return {
    async getMany(ids: readonly string[]): Promise<Map<string, SubscriptionRow | undefined>> {
      const at = now();
      const misses = [...new Set(ids)].filter((id) => (cache.get(id)?.until ?? 0) <= at);
      if (misses.length > 0) {
        if (cache.size > 10_000) cache.clear();
        const loaded = await source.getMany(misses);
        for (const id of misses) cache.set(id, { until: at + ttlMs, row: loaded.get(id) });
      }
      return new Map(ids.map((id) => [id, cache.get(id)?.row]));
    },
    /** This process disabled it: stop sending at once rather than after the TTL. */
    markDisabled(id: string): void {
      const hit = cache.get(id);
      if (hit?.row !== undefined) hit.row = { ...hit.row, enabled: false };
    },
  };
}
export type SubscriptionCache = ReturnType<typeof createSubscriptionCache>;
