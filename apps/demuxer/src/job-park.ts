import type { PushJob } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { Outcome } from '@herald/messaging';
import type { DemuxerMetrics } from './demuxer-metrics.ts';

/**
 * A job the demuxer parks: counted, logged at warn with why, and the consumer's park outcome. The
 * `app` label is its app once known to exist ("" before, so arbitrary text published over AMQP
 * makes no series).
 */
export function parkJob(deps: { metrics: DemuxerMetrics; logger: Logger }, code: string, reason: string, job?: PushJob): Outcome {
  deps.metrics.jobs.inc({ outcome: 'parked', app: job === undefined || code === 'unknown-app' ? '' : job.app });
  deps.logger.warn({ jobId: job?.id, code, reason }, 'job parked');
  return { kind: 'park', code, reason };
}
