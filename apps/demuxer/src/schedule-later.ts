import type { DevicePush, PushJob } from '@herald/contracts';
import type { ScheduledPushInput, TargetDevice } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { splitBySchedule } from './schedule-split.ts';
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
 * For a job with deliverAt: store the pushes due later (committed before this resolves) and
 * return the ones due now, for the caller to publish. Expiring-before-due pushes are dropped.
 */
export async function scheduleLater(job: PushJob, pushes: readonly DevicePush[], devices: readonly TargetDevice[], deps: Deps, now: Date): Promise<DevicePush[]> {
  const { metrics, logger, scheduling } = deps;
  const split = splitBySchedule(job, pushes, devices, now, scheduling.slackMs);
  if (split.later.length > 0) await scheduling.store.schedule(split.later);
  for (const p of split.later) metrics.scheduled.inc({ platform: p.push.platform, outcome: 'stored' });
  for (const p of split.now) metrics.scheduled.inc({ platform: p.platform, outcome: 'due-now' });
  if (split.expired > 0) {
    metrics.scheduled.inc({ platform: pushes[0]?.platform ?? 'apns', outcome: 'expired' }, split.expired);
    logger.info({ jobId: job.id, expired: split.expired }, 'scheduled pushes would expire before they are due: dropped');
  }
  if (split.timezoneFallbacks > 0) {
    metrics.timezoneFallbacks.inc(split.timezoneFallbacks);
    logger.warn({ jobId: job.id, devices: split.timezoneFallbacks }, 'device timezone missing or unknown: local time read in UTC');
  }
  for (const alert of scheduling.wave.add(split.later.map((p) => ({ platform: p.push.platform, dueAt: p.dueAt })), now)) {
    metrics.waveOverCapacity.inc({ platform: alert.platform });
    logger.warn({ ...alert, jobId: job.id }, 'scheduled wave exceeds what the outbound rate can send in its window');
  }
  if (job.trace === true) logger.info({ jobId: job.id, trace: true, stored: split.later.length, dueNow: split.now.length }, 'trace: demuxer scheduled pushes');
  return split.now;
}
