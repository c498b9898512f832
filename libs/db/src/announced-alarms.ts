import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** An alarm as the monitor announced it firing: @herald/monitoring's Alarm, its kind a string here (times in epoch ms). */
export type AnnouncedAlarm = Record<'alarm' | 'queue' | 'summary', string> & Record<'value' | 'threshold' | 'since' | 'firedAt', number>;

/**
 * The alarms announced firing and not yet announced resolved, kept across monitor restarts and
 * lease handovers (migration 0036), so the next announcer can tell an alarm that ended unannounced
 * from one already said.
 */
export interface AnnouncedAlarmStore {
  list(): Promise<AnnouncedAlarm[]>;
  /** Kept as announced firing (nothing written unless the lease is this holder's). */
  fired(alarm: AnnouncedAlarm): Promise<void>;
  /** Announced resolved: no longer kept (nothing written unless the lease is this holder's). */
  resolved(alarm: Pick<AnnouncedAlarm, 'alarm' | 'queue'>): Promise<void>;
}

/**
 * `lease`: the writes are the lease holder's only (libs/db lease.ts): a monitor that lost the lease
 * (its writes late behind a slow database) cannot undo what the one after it recorded.
 */
export function createAnnouncedAlarmStore(db: Kysely<HeraldTables>, lease: { name: string; holder: string }): AnnouncedAlarmStore {
  const holding = sql`exists (select 1 from leases where name = ${lease.name} and holder = ${lease.holder} and expires_at > now())`;
  return {
    async list() {
      const rows = await db.selectFrom('announced_alarms').selectAll().orderBy('fired_at').orderBy('alarm').orderBy('queue').execute();
      return rows.map((r) => ({ alarm: r.alarm, queue: r.queue, summary: r.summary, value: r.value, threshold: r.threshold, since: r.since.getTime(), firedAt: r.fired_at.getTime() }));
    },
    async fired(a) {
      await sql`
        insert into announced_alarms (alarm, queue, summary, value, threshold, since, fired_at)
        select ${a.alarm}, ${a.queue}, ${a.summary}, ${a.value}, ${a.threshold}, ${new Date(a.since)}, ${new Date(a.firedAt)} where ${holding}
        on conflict (alarm, queue) do update set summary = excluded.summary, value = excluded.value, threshold = excluded.threshold, since = excluded.since, fired_at = excluded.fired_at`.execute(db);
    },
    async resolved(a) {
      await sql`delete from announced_alarms where alarm = ${a.alarm} and queue = ${a.queue} and ${holding}`.execute(db);
    },
  };
}
