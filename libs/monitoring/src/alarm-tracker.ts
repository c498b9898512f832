import type { AlarmCondition, AlarmKind } from './alarm-rules.ts';

/** An alarm that is firing: its condition has held for at least its `forMs`. */
export interface Alarm {
  alarm: AlarmKind;
  queue: string;
  summary: string;
  value: number;
  threshold: number;
  /** When the condition started to hold (epoch ms). */
  since: number;
  /** When the alarm fired (epoch ms). */
  firedAt: number;
}

/** A condition holding that has not yet held for its `forMs`: the alarm it becomes at `firesAt` if it still holds then. */
export interface PendingAlarm {
  alarm: AlarmKind;
  queue: string;
  summary: string;
  /** When the condition started to hold (epoch ms). */
  since: number;
  /** When it fires if it holds until then (epoch ms). */
  firesAt: number;
}

/** An alarm said firing before this tracker started (the monitor's announced alarms, kept in PostgreSQL), with its times. */
export type AnnouncedFiring = Pick<Alarm, 'queue' | 'since' | 'firedAt'> & { alarm: string };

type AlarmKey = { alarm: string; queue: string };

export type AlarmTransition = { state: 'firing'; alarm: Alarm; at: number } | { state: 'resolved'; alarm: Alarm; at: number };

type Tracked = { condition: AlarmCondition; since: number; firedAt: number | undefined };

const keyOf = (c: AlarmKey): string => `${c.alarm}\u0000${c.queue}`;

const toAlarm = (t: Tracked, firedAt: number): Alarm => ({
  alarm: t.condition.alarm,
  queue: t.condition.queue,
  summary: t.condition.summary,
  value: t.condition.value,
  threshold: t.condition.threshold,
  since: t.since,
  firedAt,
});

/**
 * Turns the conditions of each poll into alarms: one fires when its condition has held for its
 * `forMs`, and resolves at the first poll where the condition no longer holds.
 *
 * A restarted monitor knows nothing of how long a condition held before it: without `announced`
 * (what was said firing before it started) an alarm firing for hours would vanish from its view,
 * and come back as new only after its delay.
 */
export class AlarmTracker {
  private readonly tracked = new Map<string, Tracked>();
  /** Said firing before this tracker started, and not yet seen holding or ended here. */
  private readonly announced: Map<string, AnnouncedFiring>;

  /**
   * `announced`: alarms said firing before this tracker started. One whose condition holds when
   * first evaluated fires at once with its stored `since` and `firedAt` (its condition held all
   * along, as far as anyone can tell), once it has held for its current `forMs` since then; one seen
   * not holding is forgotten.
   */
  constructor(announced: readonly AnnouncedFiring[] = []) {
    this.announced = new Map(announced.map((a) => [keyOf(a), a]));
  }

  /**
   * The conditions holding at `now` (all of them: a condition left out has ended). `seen`: whether
   * this update read what tells whether an announced alarm's condition holds (a failed poll of the
   * queues says nothing of their alarms); one not seen is kept for a later update.
   */
  update(now: number, conditions: readonly AlarmCondition[], seen: (alarm: AlarmKey) => boolean = () => true): AlarmTransition[] {
    const transitions: AlarmTransition[] = [];
    const holding = new Set(conditions.map(keyOf));
    for (const [key, t] of this.tracked) {
      if (holding.has(key)) continue;
      this.tracked.delete(key);
      if (t.firedAt !== undefined) transitions.push({ state: 'resolved', alarm: toAlarm(t, t.firedAt), at: now });
    }
    for (const [key, a] of this.announced) if (!holding.has(key) && seen(a)) this.announced.delete(key);
    for (const condition of conditions) {
      const key = keyOf(condition);
      const stored = this.announced.get(key);
      this.announced.delete(key);
      const t: Tracked = { since: stored?.since ?? Math.min(condition.since ?? now, now), firedAt: undefined, ...this.tracked.get(key), condition };
      this.tracked.set(key, t);
      if (t.firedAt === undefined && now - t.since >= condition.forMs) {
        t.firedAt = stored?.firedAt ?? now;
        transitions.push({ state: 'firing', alarm: toAlarm(t, t.firedAt), at: now });
      }
    }
    return transitions;
  }

  /** Whether the alarm's condition held at the last update (firing, or waiting out its `forMs`). */
  holds(alarm: AlarmKey): boolean {
    return this.tracked.has(keyOf(alarm));
  }

  /** Alarms firing now, with their latest numbers. */
  active(): Alarm[] {
    return [...this.tracked.values()].flatMap((t) => (t.firedAt === undefined ? [] : [toAlarm(t, t.firedAt)]));
  }

  /** Conditions holding that have not yet held for their `forMs`. */
  pending(): PendingAlarm[] {
    return [...this.tracked.values()].flatMap(({ condition: c, since, firedAt }) =>
      firedAt === undefined ? [{ alarm: c.alarm, queue: c.queue, summary: c.summary, since, firesAt: since + c.forMs }] : [],
    );
  }
}
