import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** A row's place in the (cancelled_at, id) order; `at` is the exact timestamp as PostgreSQL wrote it (microseconds). */
export interface CancelledJobsKey {
  at: string;
  jobId: string;
}

export interface CancelledJobsReader {
  /**
   * Jobs cancelled after `since` (exclusive), in (cancelled_at, id) order, with when; with `after`,
   * only those after that key (the next page: keyset, so paging always moves on).
   */
  since(since: Date, limit: number, after?: CancelledJobsKey): Promise<Array<{ jobId: string; cancelledAt: Date; at: string }>>;
}

/** Reads jobs.cancelled_at through its partial index (migration 0021): cheap enough to poll twice a second. */
export function createCancelledJobsReader(db: Kysely<HeraldTables>): CancelledJobsReader {
  return {
    async since(since, limit, after) {
      const page = after === undefined ? sql`true` : sql`(cancelled_at, id) > (${after.at}::timestamptz, ${after.jobId})`;
      const { rows } = await sql<{ id: string; cancelled_at: Date; at: string }>`
        select id, cancelled_at, cancelled_at::text as at from jobs where cancelled_at > ${since.toISOString()}::timestamptz and ${page}
        order by cancelled_at, id limit ${limit}`.execute(db);
      return rows.map((r) => ({ jobId: r.id, cancelledAt: r.cancelled_at, at: r.at }));
    },
  };
}
