import { describeAudience, jobContentHash, type PushJob } from '@herald/contracts';
import type { FanoutRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import { jobNotices } from '@herald/providers';
import type { Outcome, Publisher } from '@herald/messaging';
import { toAudienceSpec, type AudienceSource } from './audience-source.ts';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { fanoutTaskMessage } from './fanout-task-message.ts';

export interface AudienceStartDeps {
  fanouts: Pick<FanoutRepository, 'start'>;
  audiences: AudienceSource;
  publisher: Publisher;
  metrics: DemuxerMetrics;
  logger: Logger;
}

/**
 * An admitted audience job is not fanned out here: its audience is checked and counted, the
 * fan-out and its first chunk are recorded (fanouts, fanout_chunks), and chunk 0's task is
 * published to push.fanout, where any demuxer expands it (fanout-chunk.ts). The job is acked once
 * that task is confirmed. A redelivered job re-publishes the tasks of its chunks not yet done
 * (the first delivery may have died before publishing); a duplicate task is harmless.
 */
export async function startAudienceJob(job: PushJob, acceptedAt: Date, deps: AudienceStartDeps): Promise<Outcome> {
  const audience = job.audience;
  if (audience === undefined) throw new Error(`job ${job.id} has no audience`);
  const spec = toAudienceSpec(audience);
  const problem = await deps.audiences.problem?.({ app: job.app, audience: spec });
  if (problem !== undefined) return parked(job, 'unknown-audience', problem, deps);
  const { size, exact } = await deps.audiences.size({ app: job.app, audience: spec });
  const started = await deps.fanouts.start({ jobId: job.id, app: job.app, audience, job, acceptedAt, size, exact, notices: jobNotices(job, acceptedAt), contentHash: jobContentHash(job) });
  // Its id is another job's (another app's, or other content): nothing made, nothing read.
  if ('taken' in started) return parked(job, started.taken.code, started.taken.reason, deps);
  const tasks = started.state === 'expanding' ? started.open : [];
  if (tasks.length > 0) await deps.publisher.publishMany(tasks.map((chunk) => fanoutTaskMessage(job.id, chunk)));
  if (started.created && started.state === 'cancelled') {
    deps.logger.info({ jobId: job.id }, 'audience job was cancelled before its fan-out started: nothing read, nothing sent');
    return { kind: 'ack' };
  }
  if (started.created) deps.metrics.jobs.inc({ outcome: 'fan-out-started', app: job.app });
  deps.logger[job.trace === true ? 'info' : 'debug'](
    { jobId: job.id, audience: describeAudience(audience), size, exact, created: started.created, tasks },
    'audience fan-out started',
  );
  return { kind: 'ack' };
}

function parked(job: PushJob, code: string, reason: string, deps: AudienceStartDeps): Outcome {
  deps.metrics.jobs.inc({ outcome: 'parked', app: job.app });
  deps.logger.warn({ jobId: job.id, code, reason }, 'job parked');
  return { kind: 'park', code, reason };
}
