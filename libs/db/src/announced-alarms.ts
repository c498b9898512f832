import type { Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** An alarm as the monitor announced it firing: @herald/monitoring's Alarm, its kind a string here (times in epoch ms). */
export type AnnouncedAlarm = Record<'alarm' | 'queue' | 'summary', string> & Record<'value' | 'threshold' | 'since' | 'firedAt', number>;

/**
 * The alarms announced firing and not yet resolved, kept across monitor restarts and lease
 * handovers (migration 0036), so the next announcer can tell an alarm that ended unannounced from
 * one already said.
 */
export interface AnnouncedAlarmStore {
  list(): Promise<AnnouncedAlarm[]>;
  fired(alarm: AnnouncedAlarm): Promise<void>;
  resolved(alarm: Pick<AnnouncedAlarm, 'alarm' | 'queue'>): Promise<void>;
}

export function createAnnouncedAlarmStore(db: Kysely<HeraldTables>): AnnouncedAlarmStore {
  return {
    async list() {
      const rows = await db.selectFrom('announced_alarms').selectAll().orderBy('fired_at').orderBy('alarm').orderBy('queue').execute();
      return rows.map((r) => ({ alarm: r.alarm, queue: r.queue, summary: r.summary, value: r.value, threshold: r.threshold, since: r.since.getTime(), firedAt: r.fired_at.getTime() }));
    },
    async fired(a) {
      const row = { alarm: a.alarm, queue: a.queue, summary: a.summary, value: a.value, threshold: a.threshold, since: new Date(a.since), fired_at: new Date(a.firedAt) };
      await db
        .insertInto('announced_alarms')
        .values(row)
        .onConflict((oc) => oc.columns(['alarm', 'queue']).doUpdateSet({ summary: row.summary, value: row.value, threshold: row.threshold, since: row.since, fired_at: row.fired_at }))
        .execute();
    },
    async resolved(a) {
      await db.deleteFrom('announced_alarms').where('alarm', '=', a.alarm).where('queue', '=', a.queue).execute();
    },
  };
}
