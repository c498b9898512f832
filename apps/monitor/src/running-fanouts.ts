import type { FanoutRepository, RunningFanout } from '@herald/db';

/** At most this many fan-outs are shown. */
const SHOWN = 20;

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
