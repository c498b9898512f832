import type { AnnouncedAlarm, AnnouncedAlarmStore } from '@herald/db';
import type { Logger } from '@herald/logging';
import { AlarmKinds, type Alarm, type AlarmKind, type AlarmTransition } from '@herald/monitoring';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { webhookPayload, type createWebhook } from './webhook.ts';

/** Successful polls after taking the lease before an alarm taken over may read as ended (a parked queue's growth needs two samples). */
const SETTLE_AFTER_POLLS = 3;

export interface AlarmAnnouncer {
  /** A transition of this instance's alarms; `again`: said again on taking the lease, not raised a second time. */
  announce(t: AlarmTransition, again?: 'again'): void;
  /**
   * This instance took the alarms lease: what fires that nobody announced is said (again), and
   * what was announced firing before (the store) is taken over, to be said resolved once it ends.
   */
  takeOver(active: () => readonly Alarm[], now?: number): Promise<void>;
  /** After each successful poll: an alarm taken over whose condition no longer holds is announced resolved. */
  settle(now: number, holds: (alarm: Pick<Alarm, 'alarm' | 'queue'>) => boolean): void;
  /** The store's writes still under way (at shutdown). */
  flush(): Promise<void>;
}

const keyOf = (a: { alarm: string; queue: string }): string => `${a.alarm}\u0000${a.queue}`;
const isKind = (alarm: string): alarm is AlarmKind => (AlarmKinds as readonly string[]).includes(alarm);

/**
 * Every alarm that fires or resolves goes to metrics (every monitor instance keeps its gauges), and
 * — from the one instance that holds the alarms lease, so a fleet of monitors calls once — to the
 * log and (when configured) to the webhook. What it announced firing is kept in PostgreSQL until it
 * announces it resolved, so the next announcer (this monitor restarted, another taking the lease)
 * neither says a firing alarm twice nor leaves one that ended meanwhile firing in the chat for good.
 */
export function alarmAnnouncer(deps: {
  vhost: string;
  logger: Logger;
  metrics: MonitorMetrics;
  webhook: ReturnType<typeof createWebhook> | undefined;
  /**
   * True while this instance holds the alarms lease (always, for a monitor that runs alone), and
   * while nobody can tell who holds it because the database does not answer: an alarm then, likely
   * about that very outage, is announced by every instance rather than by none.
   */
  announces: () => boolean;
  /** Where announced alarms are kept; without it each announcer starts afresh. */
  store?: AnnouncedAlarmStore;
  /** How long after taking the lease an alarm taken over may read as ended (this instance's reads must have caught up: the scheduled pushes' poll). */
  settleAfterMs?: number;
}): AlarmAnnouncer {
  /** Alarms the announcer before this one said firing and this instance has not seen fire: since when taken over, and polls since. */
  const takenOver = new Map<string, { alarm: Alarm; at: number; polls: number }>();
  /** One store write at a time, in order: a resolve must not overtake the fire it follows. */
  let writing: Promise<void> = Promise.resolve();
  const record = (t: AlarmTransition): void => {
    const store = deps.store;
    if (store === undefined) return;
    const write = (): Promise<void> => (t.state === 'firing' ? store.fired(t.alarm) : store.resolved(t.alarm));
    writing = writing.then(write).catch((err: unknown) =>
      deps.logger.warn({ err, alarm: t.alarm.alarm, queue: t.alarm.queue, state: t.state }, 'could not keep the announced alarm in PostgreSQL; the next announcer may say it again'),
    );
  };
  const say = (t: AlarmTransition): void => {
    const { alarm, queue, summary, value, threshold, since } = t.alarm;
    const fields = { alarm, queue, state: t.state, value, threshold, heldForMs: t.at - since };
    if (t.state === 'firing') deps.logger.warn(fields, `alarm firing: ${summary}`);
    else deps.logger.info(fields, `alarm resolved: ${alarm} on ${queue}`);
    deps.webhook?.post(webhookPayload(t, deps.vhost));
    record(t);
  };
  const announce = (t: AlarmTransition, again?: 'again'): void => {
    if (again === undefined) deps.metrics.recordAlarm(t);
    if (!deps.announces()) return;
    // Fired here after the announcer before said it: kept with this instance's numbers, not said twice.
    if (t.state === 'firing' && takenOver.delete(keyOf(t.alarm))) return record(t);
    say(t);
  };
  return {
    announce,
    async takeOver(active, now = Date.now()) {
      takenOver.clear();
      let said: AnnouncedAlarm[] | undefined;
      try {
        said = await deps.store?.list();
      } catch (err) {
        deps.logger.warn({ err }, 'could not read the alarms announced before; saying again what fires');
      }
      const firing = new Map(active().map((a) => [keyOf(a), a]));
      const before = new Set((said ?? []).map(keyOf));
      // The holder before may have died, or the lease been out of reach, with alarms fired
      // meanwhile announced by nobody (transitions are announced once, when they happen).
      for (const alarm of firing.values()) if (!before.has(keyOf(alarm))) announce({ state: 'firing', alarm, at: now }, 'again');
      for (const a of said ?? []) {
        if (firing.has(keyOf(a)) || !isKind(a.alarm)) continue;
        takenOver.set(keyOf(a), { alarm: { ...a, alarm: a.alarm }, at: now, polls: 0 });
      }
      if (takenOver.size > 0) deps.logger.info({ alarms: [...takenOver.values()].map((t) => `${t.alarm.alarm} on ${t.alarm.queue}`) }, 'taken over alarms announced firing before; each is announced resolved once its condition is seen ended');
    },
    settle(now, holds) {
      if (!deps.announces()) return;
      for (const [key, t] of takenOver) {
        t.polls += 1;
        if (holds(t.alarm) || t.polls < SETTLE_AFTER_POLLS || now - t.at < (deps.settleAfterMs ?? 0)) continue;
        takenOver.delete(key);
        say({ state: 'resolved', alarm: t.alarm, at: now });
      }
    },
    flush: () => writing,
  };
}
