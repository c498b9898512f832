import { JobPushOutcome, Platforms, type JobPush, type JobPushList, type JobStatus, type Platform } from '@herald/contracts';
import type { JobStatusRecord } from './job-repository.ts';
import type { PushRecord } from './push-outcomes.ts';
import { maskToken } from '@herald/logging';

/** A job's demux_outcome when it was parked: `parked: <code>`. */
export const PARKED_PREFIX = 'parked: ';

/**
 * A job's status from its record: every device push the job addressed is counted once, in its
 * outcome or in flight, so targeted = delivered + invalid + failed + parked + skipped + inFlight.
 */
export function toJobStatus(s: JobStatusRecord): JobStatus {
  const n = (outcome: string): number => s.outcomes[outcome] ?? 0;
  const parked = Object.values(s.parkedBy).reduce((a, b) => a + b, 0);
  const skipped = {
    optedOut: n('opted-out'),
    muted: n('muted'),
    noDevice: s.job.noDevice ?? 0,
    expired: n('expired'),
    cancelled: n('cancelled'),
  };
  const terminal = n('delivered') + n('invalid') + n('failed') + parked + Object.values(skipped).reduce((a, b) => a + b, 0);
  const demux = s.job.demuxOutcome;
  return {
    id: s.job.id,
    app: s.job.app,
    acceptedAt: s.job.acceptedAt.toISOString(),
    published: s.job.publishedAt !== null,
    demuxOutcome: demux,
    targeted: s.job.targeted,
    delivered: n('delivered'),
    invalid: n('invalid'),
    expired: skipped.expired,
    parked,
    parkedBy: s.parkedBy,
    failed: n('failed'),
    skipped,
    // Never below 0 on the wire; the property test (test/e2e/job-status-sum.spec.ts) holds the sum exact.
    inFlight: inFlightOf(s, terminal),
    scheduled: s.scheduled,
    jobParked:
      demux?.startsWith(PARKED_PREFIX) === true ? { code: demux.slice(PARKED_PREFIX.length), reason: s.job.demuxReason } : null,
    notices: s.job.notices,
    state: jobState(s, inFlightOf(s, terminal)),
    audience:
      s.fanout == null
        ? null
        : {
            target: typeof s.fanout.audience === 'object' && s.fanout.audience !== null ? (s.fanout.audience as Record<string, unknown>) : {},
            size: s.fanout.size === null ? null : Number(s.fanout.size),
            sizeExact: s.fanout.exact,
            expanded: Number(s.fanout.expanded),
            chunks: Number(s.fanout.chunks),
            chunksDone: Number(s.fanout.chunksDone),
          },
  };
}

const inFlightOf = (s: JobStatusRecord, terminal: number): number | null => (s.job.targeted === null ? null : Math.max(0, s.job.targeted - terminal));

/**
 * expanding until the demuxer made every push (an audience job: read every chunk), sending while
 * any is in flight, then done; a cancelled job is cancelling while pushes are still in flight (the
 * pushers drop them within about a second, a delivered one stays delivered), then cancelled.
 */
function jobState(s: JobStatusRecord, inFlight: number | null): NonNullable<JobStatus['state']> {
  if (s.cancelledAt != null || s.fanout?.state === 'cancelled') return inFlight !== null && inFlight > 0 ? 'cancelling' : 'cancelled';
  // Before a fan-out's own state (expanding until every chunk is done): one whose chunk task was
  // parked reads expanding while another chunk is neither done nor parked (a chunk parked after it
  // linked the next does not stop the chain), then sending while any push is on its way, other than
  // a parked chunk's with no outcome and not stored (maybe never published: none comes until the
  // task is replayed), then done.
  if (s.job.demuxOutcome?.startsWith(PARKED_PREFIX) === true) {
    if ((s.fanout?.chunksOpen ?? 0) > 0) return 'expanding';
    return (inFlight ?? 0) - (s.fanout?.parkedUnsent ?? 0) > 0 ? 'sending' : 'done';
  }
  if (s.fanout != null && s.fanout.state === 'expanding') return 'expanding';
  if (inFlight === null) return 'expanding';
  return inFlight > 0 ? 'sending' : 'done';
}

function toJobPush(r: PushRecord): JobPush {
  const outcome = JobPushOutcome.safeParse(r.outcome);
  return {
    pushId: r.pushId,
    platform: (Platforms as readonly (string | null)[]).includes(r.platform) ? (r.platform as Platform) : null,
    deviceId: r.deviceId,
    // Masked as in Herald's logs and GET /v1/devices, so a row can be matched with either.
    token: r.token === null ? null : maskToken(r.token),
    // An outcome written by an older Herald (before 0017 every park was "parked").
    outcome: outcome.success ? outcome.data : 'parked',
    code: r.code,
    reason: r.reason,
    providerMessageId: r.providerMessageId,
    dueAt: r.dueAt?.toISOString() ?? null,
    updatedAt: r.updatedAt.toISOString(),
  };
}

/** A page of `limit` rows; `next` only when the page is full (there may be more). */
export function toJobPushList(rows: readonly PushRecord[], limit: number): JobPushList {
  const last = rows[rows.length - 1];
  return { pushes: rows.map(toJobPush), next: rows.length === limit && last !== undefined ? last.pushId : null };
}
