import type { FanoutRepository, RunningFanout } from '@herald/db';

/** At most this many fan-outs are shown. */
const SHOWN = 20;

/** How long one read of the running fan-outs answers every dashboard. */
export const RUNNING_FANOUTS_TTL_MS = 10_000;

/**
 * The dashboard's running fan-outs (GET /api/fanouts). A sending fan-out whose every push has an
 * outcome is marked done here and leaves the list.
 */
export async function runningFanouts(fanouts: Pick<FanoutRepository, 'running' | 'markSettled'>): Promise<RunningFanout[]> {
  const all = await fanouts.running(SHOWN);
  const settled = all.filter((f) => f.state === 'sending' && f.settled >= f.targeted);
  await fanouts.markSettled(settled.map((f) => f.jobId));
  return all.filter((f) => !settled.includes(f));
}

/**
 * runningFanouts read at most once per `ttlMs` after the last read ended, the read under way
 * shared: each read counts every running fan-out's push outcomes (a million rows for a broadcast to
 * a million devices), and every open dashboard asks every 2 seconds, while PostgreSQL is at its
 * busiest. A read slower than `ttlMs` is not joined by a second. A failed read is not kept.
 */
export function cachedRunningFanouts(fanouts: Pick<FanoutRepository, 'running' | 'markSettled'>, ttlMs = RUNNING_FANOUTS_TTL_MS, now: () => number = Date.now) {
  let reading: Promise<RunningFanout[]> | undefined;
  let kept: { endedAt: number; value: RunningFanout[] } | undefined;
  return (): Promise<RunningFanout[]> => {
    if (reading !== undefined) return reading;
    if (kept !== undefined && now() - kept.endedAt < ttlMs) return Promise.resolve(kept.value);
    const read = runningFanouts(fanouts);
    reading = read;
    read.then(
      (value) => (kept = { endedAt: now(), value }),
      () => (kept = undefined),
    ).finally(() => (reading = undefined));
    return read;
  };
}
