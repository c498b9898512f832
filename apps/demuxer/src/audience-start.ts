import { describeAudience, jobContentHash, type PushJob } from '@herald/contracts';
import type { FanoutRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import { jobNotices } from '@herald/providers';
import type { Outcome, Publisher } from '@herald/messaging';
import { toAudienceSpec, type AudienceSource } from './audience-source.ts';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { fanoutTaskMessage } from './fanout-task-message.ts';
import { parkJob } from './job-park.ts';

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
  if (problem !== undefined) return parkJob(deps, 'unknown-audience', problem, job);
  const { size, exact } = await deps.audiences.size({ app: job.app, audience: spec });
  const started = await deps.fanouts.start({ jobId: job.id, app: job.app, audience, job, acceptedAt, size, exact, notices: jobNotices(job, acceptedAt), contentHash: jobContentHash(job) });
  // Its id is another job's (another app's, or other content): nothing made, nothing read.
  if ('taken' in started) return parkJob(deps, started.taken.code, started.taken.reason, job);
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
