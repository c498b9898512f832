import type { Platform } from '@herald/contracts';
import type { FaultEvent } from './fault-injector.ts';
import type { PublishedJob } from './job-stream.ts';
import type { Observed } from './record-collector.ts';

const platformOf = (fault: FaultEvent): Platform | undefined => (fault.kind.includes('apns') ? 'apns' : fault.kind.includes('fcm') ? 'fcm' : undefined);

/**
 * Only what happened once the service was running again (or the broker/database answered again)
 * counts: a request the killed process had in flight may be recorded just after the kill.
 * Returns ms from the fault's start.
 */
const firstAfterBack =
  (fault: FaultEvent) =>
  (times: Iterable<number>): number | undefined => {
    let best: number | undefined;
    for (const t of times) if (t > fault.backAt && (best === undefined || t < best)) best = t;
    return best === undefined ? undefined : best - fault.startedAt;
  };

/** Time from the fault until the sandbox accepts a push again (of the fault's platform, if it has one). */
export function deliveriesResumeMs(fault: FaultEvent, delivered: readonly Observed[]): number | undefined {
  const platform = platformOf(fault);
  return firstAfterBack(fault)(delivered.filter((r) => platform === undefined || r.platform === platform).map((r) => r.at));
}

export interface RecoveryInputs {
  /** Every 200 the sandbox gave, in time order. */
  delivered: readonly Observed[];
  jobs: ReadonlyMap<string, PublishedJob>;
  /** When the registrar stored each churn registration (devices.created_at). */
  registeredAt: readonly number[];
  /** When an invalidator marked each dead device dead (devices.updated_at). */
  invalidatedAt: ReadonlyArray<{ platform: Platform; at: number }>;
}

/**
 * Time from the fault until the work it interrupted is done again (the first such event after
 * the service is back counts), by work that only a recovered system can have done:
 * - a pusher: the next 200 on its platform;
 * - a descheduler: the next 200 of a scheduled push of its platform due after the kill (this
 *   includes waiting for that due time);
 * - the demuxer, RabbitMQ, PostgreSQL: the next 200 of a job published after the fault began;
 * - the registrar: the next registration stored; an invalidator: the next device marked dead.
 */
export function recoveryMs(fault: FaultEvent, inputs: RecoveryInputs): number | undefined {
  const after = fault.startedAt;
  const first = firstAfterBack(fault);
  const platform = platformOf(fault);
  const job = (r: Observed): PublishedJob | undefined => (r.jobId === undefined ? undefined : inputs.jobs.get(r.jobId));
  const deliveredWhere = (keep: (r: Observed, j: PublishedJob | undefined) => boolean): number[] =>
    inputs.delivered.filter((r) => keep(r, job(r))).map((r) => r.at);
  if (fault.kind.endsWith('-pusher')) return first(deliveredWhere((r) => r.platform === platform));
  if (fault.kind.endsWith('-descheduler')) return first(deliveredWhere((r, j) => r.platform === platform && j?.dueAt !== undefined && j.dueAt > after));
  if (fault.kind === 'kill:registrar') return first(inputs.registeredAt);
  if (fault.kind.endsWith('-invalidator')) return first(inputs.invalidatedAt.filter((i) => i.platform === platform).map((i) => i.at));
  return first(deliveredWhere((_, j) => j !== undefined && j.dueAt === undefined && j.publishedAt > after));
}
