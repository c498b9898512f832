/**
 * The prunes' loop: run `batch` (one delete statement of at most `batchSize` rows, a transaction
 * of its own, resolving with how many it deleted) until one deletes fewer than `batchSize`, or
 * `signal` aborts between two. Returns how many were deleted in all.
 */
export async function deleteInBatches(batchSize: number, signal: AbortSignal | undefined, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  while (signal?.aborted !== true) {
    const deleted = await batch();
    total += deleted;
    if (deleted < batchSize) break;
  }
  return total;
}
