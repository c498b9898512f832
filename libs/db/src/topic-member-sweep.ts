import { sql, type Kysely } from 'kysely';
import type { Logger } from '@herald/logging';
import type { HeraldTables } from './tables.ts';
import { DEFAULT_TOPIC_DELETE_BATCH, removeDeletedMembers } from './topic-deletion.ts';

/** Member rows of deleted topics the sweep deletes per statement. */
export const DEFAULT_TOPIC_MEMBER_SWEEP_BATCH = DEFAULT_TOPIC_DELETE_BATCH;

/** Deleted topics looked up per statement of the sweep's walk. */
const TOPICS_PER_LOOK = 100;

/**
 * Deletes the member rows left of deleted topics: those of a deletion whose removal was cut short (the
 * API stopped, crashed or lost the database while its removal ran in the background) or is still
 * under way. The deleted topics are walked once a call, in key order, from topic_deletions (a
 * deletion is kept while its topic's rows remain, topic-deletion.ts); those created again since are
 * passed over (createTopic removed their old rows). Each topic's rows go as a deletion's do
 * (removeDeletedMembers), `batchSize` a statement in the writers' lock order, skipping rows another
 * transaction holds (the API's removal, another registrar's sweep), until none is left or `signal`
 * aborts. Each batch is one statement, a transaction of its own, so it runs behind a
 * transaction-mode pooler, and registrars sweeping side by side skip each other's rows. `onBatch` is
 * told each statement's count once it has committed (a sweep failing part-way has still deleted
 * those). Returns how many were deleted.
 */
export async function sweepDeletedTopicMembers(
  db: Kysely<HeraldTables>,
  batchSize = DEFAULT_TOPIC_MEMBER_SWEEP_BATCH,
  signal?: AbortSignal,
  onBatch?: (deleted: number) => void,
): Promise<number> {
  const stopped = (): boolean => signal?.aborted === true;
  let total = 0;
  let after: { app: string; topic: string } | undefined;
  while (!stopped()) {
    const topics = await deletedTopicsWithMembers(db, after);
    for (const { app, topic } of topics) {
      if (stopped()) break;
      total += await removeDeletedMembers(db, app, topic, { batchSize, signal, skipLocked: true, onBatch });
    }
    after = topics[topics.length - 1];
    if (after === undefined || topics.length < TOPICS_PER_LOOK) break;
  }
  return total;
}

/** The next deleted topics after `after` (key order) that are not there again and have member rows left. */
async function deletedTopicsWithMembers(
  db: Kysely<HeraldTables>,
  after: { app: string; topic: string } | undefined,
): Promise<{ app: string; topic: string }[]> {
  const from = after === undefined ? sql`true` : sql`(d.app, d.topic) > (${after.app}, ${after.topic})`;
  const { rows } = await sql<{ app: string; topic: string }>`
    select d.app, d.topic from topic_deletions d
    where ${from}
      and not exists (select 1 from topics t where t.app = d.app and t.name = d.topic)
      and exists (select 1 from topic_members m where m.app = d.app and m.topic = d.topic)
    order by d.app, d.topic
    limit ${TOPICS_PER_LOOK}`.execute(db);
  return rows;
}

/** Removes a deleted topic's member rows; resolves with how many it deleted (AudienceStore.removeDeletedMembers). */
export type RemoveTopicMembers = (app: string, name: string, signal: AbortSignal) => Promise<number>;

export interface TopicMemberRemovals {
  /** Queues the removal of the deleted topic's member rows; once stopped, leaves them to the sweep. */
  add(app: string, name: string): void;
  /** Stops taking removals and stops the one under way after its current statement; resolves once it has. */
  stop(): Promise<void>;
}

/**
 * The member rows of topics deleted through this process, removed after their deletion was answered,
 * one topic at a time (one connection of the pool, however many topics are deleted at once), each by
 * `remove` (which should skip locked rows: removeDeletedMembers' skipLocked, so that stop() waits
 * for one statement at most, not for a lock). stop() aborts: what is left is the registrars'
 * sweep's (sweepDeletedTopicMembers). A removal that fails is logged and left to the sweep too.
 */
export function startTopicMemberRemovals(remove: RemoveTopicMembers, logger: Logger): TopicMemberRemovals {
  const stopping = new AbortController();
  const queued = new Map<string, { app: string; name: string }>();
  let draining = false;
  let running: Promise<void> = Promise.resolve();
  const drain = async (): Promise<void> => {
    draining = true;
    try {
      while (!stopping.signal.aborted) {
        const next = queued.entries().next();
        if (next.done === true) break;
        const [key, topic] = next.value;
        queued.delete(key);
        try {
          const removed = await remove(topic.app, topic.name, stopping.signal);
          if (removed > 0) logger.info({ app: topic.app, topic: topic.name, removed }, 'deleted topic: member rows removed');
        } catch (err) {
          logger.warn(
            { err, app: topic.app, topic: topic.name },
            "deleted topic: removing its member rows failed; the registrars' sweep removes them",
          );
        }
      }
    } finally {
      draining = false;
    }
  };
  return {
    add: (app, name) => {
      if (stopping.signal.aborted) return;
      queued.set(JSON.stringify([app, name]), { app, name });
      if (!draining) running = drain();
    },
    stop: async () => {
      stopping.abort();
      await running;
      if (queued.size > 0)
        logger.info({ topics: queued.size }, "stopping: member rows of deleted topics left to the registrars' sweep");
    },
  };
}
