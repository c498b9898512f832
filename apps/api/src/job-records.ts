import { jobIdTaken, sameContentOf, type AcceptResult, type JobIdRecord, type JobRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import { backgroundBatcher, coalesceMany } from './coalescer.ts';
import { cachedStatus } from './status-cache.ts';

/** Device pushes a job targets from which a slow read of its status is kept a while (status-cache.ts). */
export const KEPT_STATUS_FROM_PUSHES = 10_000;

/**
 * The API's job-id records. Concurrent requests' INSERTs are coalesced into one statement, and a
 * request's ids are never split between two (coalesceMany): a request whose INSERT fails leaves
 * none of its ids recorded, so its retry, corrected or not, is taken as new (not 409 job-id-reused
 * for a part recorded by a first statement and never published).
 * "Published" marks are written in the background, off the answer's path, up to 10 ms of them in
 * one UPDATE; until a mark is written, this process remembers it, so a repost meanwhile is still
 * answered as a duplicate. (A repost to another API process in those milliseconds publishes the
 * job again, which is harmless: its pushIds are deduplicated by the pushers.)
 */
export function createJobRecords(jobs: JobRepository, logger: Logger) {
  const accept = coalesceMany<JobIdRecord, AcceptResult>(async (items) => {
    // One id in two requests of the same turn: the first is recorded, and the others are answered
    // as reposts of it (another app's: 409), not as new jobs as well: one statement inserts the
    // id once, and both would have been published.
    const first = new Map<string, JobIdRecord>();
    for (const i of items) if (!first.has(i.id)) first.set(i.id, i);
    const found = await jobs.accept([...first.values()]);
    return items.map((i): AcceptResult => {
      const r = found.get(i.id) ?? { kind: 'existing', app: i.app, published: false, cancelled: false };
      const recorded = first.get(i.id) as JobIdRecord;
      if (r.kind !== 'new' || recorded === i) return r;
      return { kind: 'existing', app: recorded.app, published: false, cancelled: false, ...sameContentOf(recorded.contentHash, i.contentHash) };
    });
  });
  /** Jobs this process saw confirmed whose marks are not written yet, as they were accepted. */
  const unrecorded = new Map<string, JobIdRecord>();
  const marks = backgroundBatcher<JobIdRecord>(
    async (records) => {
      try {
        await jobs.markPublished(records);
      } finally {
        for (const r of records) unrecorded.delete(r.id);
      }
    },
    {
      delayMs: 10,
      maxBatch: 500,
      // Left unpublished, a job is merely published again if it is posted again.
      onError: (err, records) => logger.warn({ err, jobs: records.length }, 'could not record jobs as published; a repost will publish them again'),
    },
  );
  // Only a large job's: its count is what takes time; a small job's status is read afresh however slow the read.
  const statuses = cachedStatus((id: string) => jobs.status(id), (s) => (s?.job.targeted ?? 0) >= KEPT_STATUS_FROM_PUSHES);
  return {
    ...jobs,
    status: statuses.read,
    /** Its status read afresh next time (the job was cancelled here). */
    forgetStatus: statuses.forget,
    async accept(items: readonly JobIdRecord[]): Promise<Map<string, AcceptResult>> {
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
    markPublished(records: readonly JobIdRecord[]): void {
      for (const r of records) unrecorded.set(r.id, r);
      marks.add(records);
    },
    /** As the repository's, with the jobs this process saw confirmed whose marks are not written yet. */
    async publishedBefore(items: readonly JobIdRecord[]): Promise<ReadonlySet<string>> {
      const seen = items.filter((i) => {
        const r = unrecorded.get(i.id);
        return r !== undefined && jobIdTaken(i.id, i, r) === undefined;
      });
      const recorded = await jobs.publishedBefore(items.filter((i) => !unrecorded.has(i.id)));
      return new Set([...seen.map((i) => i.id), ...recorded]);
    },
    /** A job this process saw confirmed (its mark not written yet) is not forgotten. */
    forget: (ids: readonly string[]): Promise<void> => jobs.forget(ids.filter((id) => !unrecorded.has(id))),
    /** Write the marks still waiting (at shutdown). */
    flush: () => marks.flush(),
  };
}
