import type { DevicePush, PushJob } from '@herald/contracts';
import type { ScheduledPushInput } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import type { ScheduleSplit } from './schedule-split.ts';
import type { WaveMonitor } from './wave-monitor.ts';

export interface SchedulingDeps {
  store: { schedule(pushes: readonly ScheduledPushInput[]): Promise<number> };
  wave: WaveMonitor;
  horizonDays: number;
  slackMs: number;
}

interface Deps {
  scheduling: SchedulingDeps;
  metrics: DemuxerMetrics;
  logger: Logger;
}

/**
 * For a job with deliverAt, split by splitBySchedule: store the pushes due later (committed
 * before this resolves) and return the ones due now, for the caller to publish. Expiring-before-due
 * pushes are dropped (the caller has recorded them in the job's status).
 */
export async function scheduleLater(job: PushJob, split: ScheduleSplit, deps: Deps, now: Date): Promise<DevicePush[]> {
  const { metrics, logger, scheduling } = deps;
  // With the job's category and object: the user's opt-outs and mutes are asked again when each falls due.
  const about = { category: job.category, ...(job.objectId !== undefined && { objectId: job.objectId }) };
  if (split.later.length > 0) await scheduling.store.schedule(split.later.map((p) => ({ ...p, ...about })));
  for (const p of split.later) metrics.scheduled.inc({ platform: p.push.platform, outcome: 'stored' });
  for (const p of split.now) metrics.scheduled.inc({ platform: p.platform, outcome: 'due-now' });
  for (const p of split.expired) metrics.scheduled.inc({ platform: p.platform, outcome: 'expired' });
  if (split.expired.length > 0) {
    logger.info({ jobId: job.id, expired: split.expired.length }, 'scheduled pushes would expire before they are due: dropped');
  }
  if (split.timezoneFallbacks > 0) {
    metrics.timezoneFallbacks.inc({ app: job.app }, split.timezoneFallbacks);
    logger.warn({ jobId: job.id, app: job.app, devices: split.timezoneFallbacks }, 'device timezone missing or unknown: local time read in UTC');
  }
  for (const alert of scheduling.wave.add(split.later.map((p) => ({ platform: p.push.platform, dueAt: p.dueAt })), now)) {
    metrics.waveOverCapacity.inc({ platform: alert.platform });
    logger.warn({ ...alert, jobId: job.id }, 'scheduled wave exceeds what the outbound rate can send in its window');
  }
  if (job.trace === true) logger.info({ jobId: job.id, trace: true, stored: split.later.length, dueNow: split.now.length }, 'trace: demuxer scheduled pushes');
  return split.now;
}
