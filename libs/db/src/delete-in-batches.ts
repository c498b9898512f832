/**
 * The prunes' loop: run `batch` (one delete statement of at most `batchSize` rows, a transaction
 * of its own, resolving with how many it deleted) until one deletes fewer than `batchSize`, or
 * `signal` aborts between two. Returns how many were deleted in all.
 */
export async function deleteInBatches(batchSize: number, signal: AbortSignal | undefined, batch: () => Promise<number>): Promise<number> {
  return deleteWhileFull(signal, async () => {
    const deleted = await batch();
    return { deleted, full: deleted >= batchSize };
  });
}

/**
 * deleteInBatches for a statement bounded more than one way (jobs, and the outcomes it deletes of
 * them): run `batch` until one comes back not `full` (it reached none of its bounds, so nothing was
 * left), or `signal` aborts between two. Returns the sum of what each counted as `deleted`.
 */
export async function deleteWhileFull(
  signal: AbortSignal | undefined,
  batch: () => Promise<{ deleted: number; full: boolean }>,
): Promise<number> {
  let total = 0;
  while (signal?.aborted !== true) {
    const { deleted, full } = await batch();
    total += deleted;
    if (!full) break;
  }
  return total;
}
