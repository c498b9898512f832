import type { PushJob } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { Outcome } from '@herald/messaging';

/**
 * A job the demuxer parks: logged at warn with why, and the consumer's park outcome (counted once
 * parked: countParkedJobs).
 */
export function parkJob(deps: { logger: Logger }, code: string, reason: string, job?: PushJob): Outcome {
  deps.logger.warn({ jobId: job?.id, code, reason }, 'job parked');
  return { kind: 'park', code, reason };
}
