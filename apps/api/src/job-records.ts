import { sameContentOf, type AcceptResult, type JobRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import { backgroundBatcher, coalesceMany } from './coalescer.ts';

type Accept = { id: string; app: string; team: string | null; contentHash?: Buffer };

/**
 * The API's job-id records. Concurrent requests' INSERTs are coalesced into one statement.
 * "Published" marks are written in the background, off the answer's path, up to 10 ms of them in
 * one UPDATE; until a mark is written, this process remembers it, so a repost meanwhile is still
 * answered as a duplicate. (A repost to another API process in those milliseconds publishes the
 * job again, which is harmless: its pushIds are deduplicated by the pushers.)
 */
export function createJobRecords(jobs: JobRepository, logger: Logger) {
  const accept = coalesceMany<Accept, AcceptResult>(async (items) => {
    // One id in two requests of the same turn: the first is recorded, and the others are answered
    // as reposts of it (another app's: 409), not as new jobs as well: one statement inserts the
    // id once, and both would have been published.
    const first = new Map<string, Accept>();
    for (const i of items) if (!first.has(i.id)) first.set(i.id, i);
    const found = await jobs.accept([...first.values()]);
    return items.map((i): AcceptResult => {
      const r = found.get(i.id) ?? { kind: 'existing', app: i.app, published: false };
      const recorded = first.get(i.id) as Accept;
      if (r.kind !== 'new' || recorded === i) return r;
      return { kind: 'existing', app: recorded.app, published: false, ...sameContentOf(recorded.contentHash, i.contentHash) };
    });
  });
  const unrecorded = new Set<string>();
  const marks = backgroundBatcher<string>(
    async (ids) => {
      try {
        await jobs.markPublished(ids);
      } finally {
        for (const id of ids) unrecorded.delete(id);
      }
    },
    {
      delayMs: 10,
      maxBatch: 500,
      // Left unpublished, a job is merely published again if it is posted again.
      onError: (err, ids) => logger.warn({ err, jobs: ids.length }, 'could not record jobs as published; a repost will publish them again'),
    },
  );
  return {
    ...jobs,
    async accept(items: readonly Accept[]): Promise<Map<string, AcceptResult>> {
      // Asked before the read as well as after: a mark written while the read is in flight leaves
      // `unrecorded` before the answer is looked at, yet the read may have missed it.
      const confirmedBefore = items.map((item) => unrecorded.has(item.id));
      const results = await accept(items);
      return new Map(
        items.map((item, i) => {
          const r = results[i] as AcceptResult;
          const confirmed = confirmedBefore[i] === true || unrecorded.has(item.id);
          return [item.id, r.kind === 'existing' && confirmed ? { ...r, published: true } : r];
        }),
      );
    },
    markPublished(ids: readonly string[]): void {
      for (const id of ids) unrecorded.add(id);
      marks.add(ids);
    },
    /** Write the marks still waiting (at shutdown). */
    flush: () => marks.flush(),
  };
}
