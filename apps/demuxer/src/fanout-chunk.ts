import { FanoutTask, PushJob, decodeWith, derivePushId, describeIssues, jobExpiry } from '@herald/contracts';
import { plannedOf, type AppRow, type AudienceDevice, type ChunkRecorded, type FanoutChunk, type FanoutRepository, type PushOutcomeEntry } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { InboundMessage, Outcome, Publisher } from '@herald/messaging';
import { toAudienceSpec, type AudienceSource } from './audience-source.ts';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { publishSliced } from './fan-out.ts';
import { fanoutTaskMessage } from './fanout-task-message.ts';
import { planJob, type JobPlan } from './job-plan.ts';
import { scheduleLater, type SchedulingDeps } from './schedule-later.ts';

export interface FanoutChunkDeps {
  fanouts: Pick<FanoutRepository, 'get' | 'chunk' | 'state' | 'linkNext' | 'recordChunk' | 'recordOutcomes' | 'cancelPlanned' | 'finishChunk'>;
  /** The app of each chunk's job, as it is now (the demuxer's app cache): a disabled app's fan-out stops at its next chunk. */
  apps: { get(id: string): Promise<AppRow | undefined> };
  audiences: AudienceSource;
  publisher: Publisher;
  scheduling: SchedulingDeps;
  metrics: DemuxerMetrics;
  logger: Logger;
  /** Members' devices read per chunk (FANOUT_CHUNK_SIZE). */
  chunkSize: number;
  /** Device pushes per RabbitMQ message to a send queue (PUSH_PACK_SIZE); default 1. */
  packMax?: number;
  /** Most device pushes published at once; default PUBLISH_SLICE (fan-out.ts). */
  publishSlice?: number;
  now?: () => Date;
}

const ack: Outcome = { kind: 'ack' };

/** The limit of a read that must reach the end of the audience (a last chunk read again). */
const TO_THE_END = 2_147_483_647;

/** Devices that changed hands this long before the fan-out started count as changed during it (a registration's time is its transaction's start). */
const MOVED_SLACK_MS = 60_000;

/** How long a copy that lost a race for a chunk waits before it looks again. */
const RACE_DELAY_MS = 1000;

/**
 * push.fanout: expand one chunk of an audience job. In order: check the fan-out is not cancelled;
 * read the chunk (keyset, after the cursor its predecessor recorded); record where the next chunk
 * starts and publish its task (so another demuxer reads it while this one sends); write this
 * chunk's counts, the devices it plans pushes for and its skip outcomes (refused if the job was
 * cancelled meanwhile); publish or store its pushes; mark it done; ack. A demuxer dying anywhere in
 * between leaves the task unacked, and whoever gets it again redoes the chunk: read up to the same
 * end if it was linked, or from its planned devices if it was planned, so the pushes counted are
 * the pushes sent, with the same pushIds (the pushers' ledger sends each at most once). A copy that
 * finds another copy linked or planned the chunk differently comes back later and follows it.
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
  const chunk = await deps.fanouts.chunk(jobId, chunkNo);
  if (fanout.state === 'cancelled') return cancelled(jobId, chunk, deps);
  if (chunk === undefined) return park(deps, 'unknown-chunk', `job "${jobId}" has no chunk ${chunkNo}`);
  // A duplicate task (a redelivered job or task re-published it, or a copy deferred while the
  // database was away): the chunk is done. Its demuxer may have died, or met a database error,
  // between marking the chunk done and moving the fan-out on, or between creating the next chunk
  // and publishing its task, and a copy deferred by the consumer comes back looking like a first
  // delivery: so both are done again, whatever the delivery's flags (each is idempotent; the next
  // chunk's task goes out unless that chunk is done, and a duplicate task is harmless).
  if (chunk.state === 'done') {
    await deps.fanouts.finishChunk(jobId, chunkNo);
    await republishNext(jobId, chunkNo, deps);
    return counted(deps, 'duplicate');
  }
  const parsed = PushJob.safeParse(fanout.job);
  const audience = parsed.success ? parsed.data.audience : undefined;
  // Stored by an earlier release, a job may break a rule added since (a Live Activity date in milliseconds): say which.
  if (!parsed.success) return park(deps, 'schema', `the stored job "${jobId}" no longer passes the job contract: ${describeIssues(parsed.error)}`);
  if (audience === undefined) return park(deps, 'schema', `the stored job "${jobId}" is not an audience job`);
  const job = parsed.data;
  const stopped = await appStopped(job.app, chunkNo, deps);
  if (stopped !== undefined) return stopped;
  const now = deps.now?.() ?? new Date();
  const expiry = jobExpiry(job, fanout.acceptedAt);
  const expired = expiry !== undefined && expiry <= now;
  const planFor = (devices: Parameters<typeof planJob>[2]) => planJob(job, fanout.acceptedAt, devices, expired, now, deps.scheduling.slackMs);
  if (chunk.state === 'planned' && chunk.planned !== null) {
    // Planned by a copy that died or is still at it: the same devices again, not a second read.
    const { devices, gone } = await deps.audiences.planned({ app: job.app, category: job.category, ...(job.objectId !== undefined && { objectId: job.objectId }), now, planned: chunk.planned });
    const plan = planFor(devices);
    if ((await deps.fanouts.recordOutcomes(jobId, [...plan.outcomes, ...gone.map((d) => goneOutcome(jobId, d))])) === 'cancelled') return cancelled(jobId, chunk, deps);
    await send(job, plan, expired, now, deps);
    await deps.fanouts.finishChunk(jobId, chunkNo);
    if (chunk.nextCursor !== null) await republishNext(jobId, chunkNo, deps);
    return counted(deps, chunk.nextCursor === null ? 'last' : 'expanded');
  }
  const read = await deps.audiences.read({
    app: job.app,
    audience: toAudienceSpec(audience),
    category: job.category,
    ...(job.objectId !== undefined && { objectId: job.objectId }),
    after: chunk.afterCursor,
    // Linked before (a redelivery): exactly the range read the first time, so chunk k+1 still starts where this one ends.
    ...(chunk.nextCursor !== null && { until: chunk.nextCursor }),
    limit: chunk.linked && chunk.nextCursor === null ? TO_THE_END : deps.chunkSize,
    now,
    startedAt: fanout.startedAt,
    // A topic as its members were when the fan-out started (every chunk, and a chunk redone, alike).
    ...(fanout.startSnapshot !== null && { asOf: fanout.startSnapshot }),
  });
  // The chain first: the next chunk's task goes out before this chunk is sent, so demuxers work side by side.
  const link = await deps.fanouts.linkNext(jobId, chunkNo, read.next);
  if (link.next !== read.next) return raced(deps, jobId, chunkNo, 'linked');
  if (read.next !== null && link.created) {
    if ((await deps.fanouts.state(jobId)) === 'cancelled') return counted(deps, 'cancelled');
    await deps.publisher.publish(fanoutTaskMessage(jobId, chunkNo + 1));
  } else if (read.next !== null) {
    // Linked by a copy before this one, which may have died before publishing the next task.
    await republishNext(jobId, chunkNo, deps);
  }
  const movedSince = new Date(fanout.startedAt.getTime() - MOVED_SLACK_MS);
  const { recorded, plan, emitted } = await planAndRecord(jobId, chunkNo, read, movedSince, planFor, deps);
  if (recorded === 'cancelled') return counted(deps, 'cancelled');
  if (recorded === 'planned-before') return raced(deps, jobId, chunkNo, 'planned');
  await send(job, plan, expired, now, deps);
  await deps.fanouts.finishChunk(jobId, chunkNo);
  deps.metrics.fanoutDevices.inc(read.devices.length);
  if (job.trace === true) {
    deps.logger.info({ jobId, trace: true, chunk: chunkNo, devices: read.devices.length, emitted, last: read.next === null }, 'trace: demuxer expanded a chunk');
  }
  return counted(deps, read.next === null ? 'last' : 'expanded');
}

/**
 * Plan the devices read and record the chunk. A device that moved from a member another chunk read
 * to one read here, or the other way (a registration to another user meanwhile), is the chunk's
 * that recorded it first: recordChunk looks under the job row's lock, so two chunks read side by
 * side cannot both count it, and answers such devices; the chunk is planned again without them.
 */
async function planAndRecord(
  jobId: string,
  chunkNo: number,
  read: { devices: readonly AudienceDevice[]; usersWithoutDevice: number },
  movedSince: Date,
  planFor: (devices: readonly AudienceDevice[]) => JobPlan,
  deps: FanoutChunkDeps,
): Promise<{ recorded: Exclude<ChunkRecorded, object>; plan: JobPlan; emitted: number }> {
  let devices = read.devices;
  for (;;) {
    const plan = planFor(devices);
    const emitted = plan.split.now.length + plan.split.later.length;
    // planJob counts users without a device from the job's user list; an audience job has none: the
    // reader counts its users with no device at all, and those whose devices this push cannot reach are counted here.
    const noDevice = read.usersWithoutDevice + unreachedUsers(devices, plan.reachable);
    const recorded = await deps.fanouts.recordChunk(jobId, chunkNo, {
      devices: devices.length,
      targeted: plan.targeted + noDevice,
      noDevice,
      emitted,
      outcomes: plan.outcomes,
      planned: plannedOf(plan.reachable),
      moved: { deviceIds: devices.map((d) => d.deviceId), since: movedSince },
    });
    if (typeof recorded !== 'object') return { recorded, plan, emitted };
    devices = devices.filter((d) => !recorded.elsewhere.has(d.deviceId));
  }
}

/** Publish the plan's pushes due now, store the later ones. */
async function send(job: PushJob, plan: JobPlan, expired: boolean, now: Date, deps: FanoutChunkDeps): Promise<void> {
  const pushes = job.deliverAt === undefined || expired ? plan.split.now : await scheduleLater(job, plan.split, deps, now);
  await publishSliced(deps.publisher, pushes, deps.packMax ?? 1, deps.publishSlice);
  for (const p of pushes) deps.metrics.devicePushes.inc({ platform: p.platform });
}

/**
 * The next chunk's task again while no copy of it has begun that chunk (still pending, its end not
 * linked): its creator may have died, or been deferred, before publishing it. Once a copy has
 * linked it, that copy (or its redelivery) carries the chain: publishing it again then would send
 * each duplicate task on down the chain, and duplicates of duplicates after them.
 */
async function republishNext(jobId: string, chunkNo: number, deps: FanoutChunkDeps): Promise<void> {
  const next = await deps.fanouts.chunk(jobId, chunkNo + 1);
  if (next !== undefined && next.state === 'pending' && !next.linked && (await deps.fanouts.state(jobId)) !== 'cancelled') {
    await deps.publisher.publish(fanoutTaskMessage(jobId, chunkNo + 1));
  }
}

/**
 * A cancelled fan-out's task. A chunk planned but not done had its pushes counted and perhaps not
 * published (its demuxer died, or cancel came between): those without an outcome are recorded
 * cancelled, or the job would show them in flight for ever. The cancel records them itself (a
 * parked task never comes back); this covers a fan-out cancelled by a release before it did.
 */
async function cancelled(jobId: string, chunk: FanoutChunk | undefined, deps: FanoutChunkDeps): Promise<Outcome> {
  if (chunk?.state === 'planned' && chunk.planned !== null) {
    await deps.fanouts.cancelPlanned(jobId, chunk.planned.deviceIds.map((deviceId) => ({ pushId: derivePushId(jobId, deviceId), deviceId })));
  }
  return counted(deps, 'cancelled');
}

/** Another copy of the task linked or planned this chunk first: come back once it is done (or redo what it planned). */
function raced(deps: FanoutChunkDeps, jobId: string, chunkNo: number, what: 'linked' | 'planned'): Outcome {
  deps.metrics.fanoutChunks.inc({ outcome: 'raced' });
  return { kind: 'defer', code: 'fanout-race', reason: `another demuxer ${what} chunk ${chunkNo} of job "${jobId}" first`, delayMs: RACE_DELAY_MS };
}

/**
 * Users of a user-based audience (a follower, a topic's user member) read in this chunk whose
 * devices the job's push cannot reach (a VoIP push to a user with Android phones, a background push
 * to one with browsers only): without a device, as a job's own users are (planJob). A chunk holds
 * all of a user's devices. A device member (toDevice) the push cannot reach is not addressed.
 */
function unreachedUsers(devices: readonly AudienceDevice[], reachable: readonly AudienceDevice[]): number {
  const reached = new Set(reachable.map((d) => d.userId));
  return new Set(devices.filter((d) => d.toDevice !== true && !reached.has(d.userId)).map((d) => d.userId)).size;
}

const goneOutcome = (jobId: string, deviceId: string): PushOutcomeEntry => ({
  pushId: derivePushId(jobId, deviceId),
  jobId,
  outcome: 'invalid',
  code: 'device-gone',
  reason: 'the device was deleted before its push was sent',
  deviceId,
});

/**
 * A chunk of a job whose app is disabled (or gone) now is parked, not read: disabling an app is how
 * an operator stops it sending, and a broadcast under way otherwise read every remaining chunk and
 * published pushes the pushers then parked one by one (up to a million). Parked here, the fan-out
 * stops at this chunk; replaying the task once the app is enabled resumes it from here.
 */
async function appStopped(appId: string, chunkNo: number, deps: FanoutChunkDeps): Promise<Outcome | undefined> {
  const app = await deps.apps.get(appId);
  if (app === undefined) return park(deps, 'unknown-app', `unknown app "${appId}": the fan-out stopped at chunk ${chunkNo}`);
  if (!app.enabled) {
    return park(deps, 'app-disabled', `app "${appId}" is disabled: the fan-out stopped at chunk ${chunkNo}; enable the app and replay this task (push.fanout.parked) to go on from here`);
  }
  return undefined;
}

function counted(deps: FanoutChunkDeps, outcome: 'expanded' | 'last' | 'cancelled' | 'duplicate'): Outcome {
  deps.metrics.fanoutChunks.inc({ outcome });
  return ack;
}

/** Logged, and the consumer's park outcome (counted once parked: countParkedChunks). */
function park(deps: FanoutChunkDeps, code: string, reason: string): Outcome {
  deps.logger.warn({ code, reason }, 'fan-out task parked');
  return { kind: 'park', code, reason };
}
