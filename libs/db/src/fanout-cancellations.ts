import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

export interface CancelledJobsReader {
  /** Jobs cancelled after `since` (exclusive), oldest first, with when. */
  since(since: Date, limit: number): Promise<Array<{ jobId: string; cancelledAt: Date }>>;
}

/** Reads jobs.cancelled_at through its partial index (migration 0021): cheap enough to poll twice a second. */
export function createCancelledJobsReader(db: Kysely<HeraldTables>): CancelledJobsReader {
  return {
    async since(since, limit) {
      const { rows } = await sql<{ id: string; cancelled_at: Date }>`
        select id, cancelled_at from jobs where cancelled_at > ${since.toISOString()}::timestamptz
        order by cancelled_at limit ${limit}`.execute(db);
      return rows.map((r) => ({ jobId: r.id, cancelledAt: r.cancelled_at }));
    },
  };
}
