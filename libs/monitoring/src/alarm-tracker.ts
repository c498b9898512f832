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

export type AlarmTransition = { state: 'firing'; alarm: Alarm; at: number } | { state: 'resolved'; alarm: Alarm; at: number };

type Tracked = { condition: AlarmCondition; since: number; firedAt: number | undefined };

const keyOf = (c: { alarm: string; queue: string }): string => `${c.alarm}\u0000${c.queue}`;

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
 */
export class AlarmTracker {
  private readonly tracked = new Map<string, Tracked>();

  /** The conditions holding at `now` (all of them: a condition left out has ended). */
  update(now: number, conditions: readonly AlarmCondition[]): AlarmTransition[] {
    const transitions: AlarmTransition[] = [];
    const holding = new Set(conditions.map(keyOf));
    for (const [key, t] of this.tracked) {
      if (holding.has(key)) continue;
      this.tracked.delete(key);
      if (t.firedAt !== undefined) transitions.push({ state: 'resolved', alarm: toAlarm(t, t.firedAt), at: now });
    }
    for (const condition of conditions) {
      const key = keyOf(condition);
      const t: Tracked = { since: now, firedAt: undefined, ...this.tracked.get(key), condition };
      this.tracked.set(key, t);
      if (t.firedAt === undefined && now - t.since >= condition.forMs) {
        t.firedAt = now;
        transitions.push({ state: 'firing', alarm: toAlarm(t, now), at: now });
      }
    }
    return transitions;
  }

  /** Whether the alarm's condition held at the last update (firing, or waiting out its `forMs`). */
  holds(alarm: { alarm: string; queue: string }): boolean {
    return this.tracked.has(keyOf(alarm));
  }

  /** Alarms firing now, with their latest numbers. */
  active(): Alarm[] {
    return [...this.tracked.values()].flatMap((t) => (t.firedAt === undefined ? [] : [toAlarm(t, t.firedAt)]));
  }
}
