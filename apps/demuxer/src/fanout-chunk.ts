import { FanoutTask, PushJob, decodeWith, jobExpiry } from '@herald/contracts';
import type { FanoutRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { InboundMessage, Outcome, Publisher } from '@herald/messaging';
import { toAudienceSpec, type AudienceSource } from './audience-source.ts';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { toSendMessage } from './fan-out.ts';
import { fanoutTaskMessage } from './fanout-task-message.ts';
import { planJob } from './job-plan.ts';
import { scheduleLater, type SchedulingDeps } from './schedule-later.ts';

export interface FanoutChunkDeps {
  fanouts: Pick<FanoutRepository, 'get' | 'chunk' | 'state' | 'linkNext' | 'recordChunk' | 'finishChunk'>;
  audiences: AudienceSource;
  publisher: Publisher;
  scheduling: SchedulingDeps;
  metrics: DemuxerMetrics;
  logger: Logger;
  /** Members' devices read per chunk (FANOUT_CHUNK_SIZE). */
  chunkSize: number;
  /** Device pushes per RabbitMQ message to a send queue (PUSH_PACK_SIZE); default 1. */
  packMax?: number;
  now?: () => Date;
}

const ack: Outcome = { kind: 'ack' };

/**
 * push.fanout: expand one chunk of an audience job. In order: check the fan-out is not cancelled;
 * read the chunk (keyset, after the cursor its predecessor recorded); record where the next chunk
 * starts and publish its task (so another demuxer reads it while this one sends); write this
 * chunk's counts and skip outcomes (refused if the job was cancelled meanwhile); publish or store
 * its pushes; mark it done; ack. A demuxer dying anywhere in between leaves the task unacked, and
 * whoever gets it again redoes the chunk: its pushIds are the same, so the pushers' ledger sends
 * each at most once.
 */
export function createFanoutChunkHandler(deps: FanoutChunkDeps) {
  return (messages: readonly InboundMessage[]): Promise<Outcome[]> => Promise.all(messages.map((m) => expandChunk(m, deps)));
}

async function expandChunk(message: InboundMessage, deps: FanoutChunkDeps): Promise<Outcome> {
  const task = decodeWith(FanoutTask, message.body);
  if (!task.ok) return park(deps, 'schema', task.reason);
  const { jobId, chunk: chunkNo } = task.value;
  const fanout = await deps.fanouts.get(jobId);
  if (fanout === undefined) return park(deps, 'unknown-fanout', `no fan-out recorded for job "${jobId}"`);
  if (fanout.state === 'cancelled') return counted(deps, 'cancelled');
  const chunk = await deps.fanouts.chunk(jobId, chunkNo);
  if (chunk === undefined) return park(deps, 'unknown-chunk', `job "${jobId}" has no chunk ${chunkNo}`);
  // A duplicate task (a redelivered job or task re-published it): the chunk is done. Redelivered,
  // it may be the copy whose demuxer created the next chunk and died before publishing its task,
  // while another copy, which did not create it, finished this chunk without publishing it: so the
  // next chunk's task goes out again unless that chunk is done (a duplicate task is harmless).
  if (chunk.state === 'done') {
    const next = message.redelivered || message.attempt > 1 ? await deps.fanouts.chunk(jobId, chunkNo + 1) : undefined;
    if (next !== undefined && next.state !== 'done' && (await deps.fanouts.state(jobId)) !== 'cancelled') {
      await deps.publisher.publish(fanoutTaskMessage(jobId, chunkNo + 1));
    }
    return counted(deps, 'duplicate');
  }
  const parsed = PushJob.safeParse(fanout.job);
  const audience = parsed.success ? parsed.data.audience : undefined;
  if (!parsed.success || audience === undefined) return park(deps, 'schema', `the stored job "${jobId}" is not an audience job`);
  const job = parsed.data;
  const now = deps.now?.() ?? new Date();
  const read = await deps.audiences.read({
    app: job.app,
    audience: toAudienceSpec(audience),
    category: job.category,
    ...(job.objectId !== undefined && { objectId: job.objectId }),
    after: chunk.afterCursor,
    // Redone after a redelivery: exactly the range read the first time, so chunk k+1 still starts where this one ends.
    ...(chunk.nextCursor !== null && { until: chunk.nextCursor }),
    limit: deps.chunkSize,
    now,
    startedAt: fanout.startedAt,
    // A topic as its members were when the fan-out started (every chunk, and a chunk redone, alike).
    ...(fanout.startSnapshot !== null && { asOf: fanout.startSnapshot }),
  });
  // The chain first: the next chunk's task goes out before this chunk is sent, so demuxers work side by side.
  const createdNext = await deps.fanouts.linkNext(jobId, chunkNo, read.next);
  const again = message.redelivered || message.attempt > 1;
  if (read.next !== null && (createdNext || again)) {
    if ((await deps.fanouts.state(jobId)) === 'cancelled') return counted(deps, 'cancelled');
    await deps.publisher.publish(fanoutTaskMessage(jobId, chunkNo + 1));
  }
  const expiry = jobExpiry(job, fanout.acceptedAt);
  const expired = expiry !== undefined && expiry <= now;
  const plan = planJob(job, fanout.acceptedAt, read.devices, expired, now, deps.scheduling.slackMs);
  const emitted = plan.split.now.length + plan.split.later.length;
  // planJob counts users without a device from the job's user list; an audience job has none, the reader counts them.
  const counts = { devices: read.devices.length, targeted: plan.targeted + read.usersWithoutDevice, noDevice: read.usersWithoutDevice, emitted, outcomes: plan.outcomes };
  if ((await deps.fanouts.recordChunk(jobId, chunkNo, counts)) === 'cancelled') return counted(deps, 'cancelled');
  const pushes = job.deliverAt === undefined || expired ? plan.split.now : await scheduleLater(job, plan.split, deps, now);
  if (pushes.length > 0) await deps.publisher.publishMany(pushes.map(toSendMessage), { packMax: deps.packMax ?? 1 });
  for (const p of pushes) deps.metrics.devicePushes.inc({ platform: p.platform });
  await deps.fanouts.finishChunk(jobId, chunkNo);
  deps.metrics.fanoutDevices.inc(read.devices.length);
  if (job.trace === true) {
    deps.logger.info({ jobId, trace: true, chunk: chunkNo, devices: read.devices.length, emitted, last: read.next === null }, 'trace: demuxer expanded a chunk');
  }
  return counted(deps, read.next === null ? 'last' : 'expanded');
}

function counted(deps: FanoutChunkDeps, outcome: 'expanded' | 'last' | 'cancelled' | 'duplicate'): Outcome {
  deps.metrics.fanoutChunks.inc({ outcome });
  return ack;
}

function park(deps: FanoutChunkDeps, code: string, reason: string): Outcome {
  deps.metrics.fanoutChunks.inc({ outcome: 'parked' });
  deps.logger.warn({ code, reason }, 'fan-out task parked');
  return { kind: 'park', code, reason };
}
