import type { DownLaneRow } from '@herald/db';
import type { AlarmCondition } from '@herald/monitoring';

/** The pseudo-queue a lane's alarm names: `lane.<platform>/<lane>` (`connection of <app>` names an APNs and an FCM lane alike). */
export const laneQueueOf = (platform: string, lane: string): string => `lane.${platform}/${lane}`;

const minutes = (ms: number): string => (ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`);

/**
 * The provider-down alarm's conditions: per lane some pusher takes to be down (provider_lanes, rows
 * its pusher wrote lately; readDownLanes), firing once it has been down `graceMs` (its `since` is
 * the longest any says it has been down, read at `now`, so a monitor that first reads a lane down
 * for an hour says so at once). Its pushes are acked into the delay queues unsent, so no queue backs
 * up and nothing parks until PROVIDER_DOWN_HOLD_MS (a day): nothing else the monitor reads sees the
 * outage. One pusher saying so is enough, as for HeraldProviderDown (a lane down in one pusher only
 * is that pusher's way out). Ends when no pusher says it any more: the lane answered, or went
 * quiet, or its pushers are gone (their rows stale; their queues' no-consumer alarm says that).
 * `value` is how long it has been down, in seconds.
 */
export function providerDownConditions(rows: readonly DownLaneRow[], graceMs: number, now: number): AlarmCondition[] {
  const lanes = new Map<string, DownLaneRow[]>();
  for (const r of rows) {
    const queue = laneQueueOf(r.platform, r.lane);
    lanes.set(queue, [...(lanes.get(queue) ?? []), r]);
  }
  return [...lanes].map(([queue, said]) => {
    const first = said[0] as DownLaneRow;
    const downForMs = Math.max(...said.map((r) => r.downForMs));
    const where = said.length === 1 ? first.instance : `${said.length} pushers`;
    return {
      alarm: 'provider-down' as const,
      queue,
      forMs: graceMs,
      since: now - downForMs,
      value: Math.round(downForMs / 1000),
      threshold: Math.round(graceMs / 1000),
      summary: `${first.platform} provider lane '${first.lane}' down for ${minutes(downForMs)} in ${where}: its sends get no answer or server errors (the pushers' warn line 'provider lane down' names the last); its pushes are held unsent, one trying it every PROVIDER_DOWN_PROBE_MS, and parked provider-down once held PROVIDER_DOWN_HOLD_MS`,
    };
  });
}

/**
 * The provider-down conditions read after a spell of failed reads, while the lanes are held: no
 * pusher could write its lanes while PostgreSQL was away either, so an outage longer than their
 * staleness (90 s) leaves every row stale, and a read before each pusher writes again (within
 * seconds of the database's return: lane-state-recorder.ts) sees none. A lane said down before
 * (`before`) and not read now is kept, not resolved to be raised again at that write: a false
 * "resolved" in the chat and a second page.
 */
export function holdingLanes(fresh: readonly AlarmCondition[], before: readonly AlarmCondition[]): AlarmCondition[] {
  const read = new Set(fresh.map((c) => c.queue));
  return [...fresh, ...before.filter((c) => !read.has(c.queue))];
}
