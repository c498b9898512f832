import { Exchanges, sendQueueFor, type Platform } from '@herald/contracts';
import type { DueRow, PushOutcomeEntry, ReleaseResult, ScheduledPushRepository, SkippedCounts } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { OutboundMessage, Publisher } from '@herald/messaging';
import { TIMED_OUT, within } from '@herald/runtime';
import type { DeschedulerMetrics } from './descheduler-metrics.ts';
import { WakeTimer } from './wake-timer.ts';

export interface DeschedulerDeps {
  platform: Platform;
  store: Pick<ScheduledPushRepository, 'withDueBatch' | 'nextDueAt'>;
  publisher: Publisher;
  metrics: DeschedulerMetrics;
  logger: Logger;
  batchSize: number;
  /** Pushes per RabbitMQ message to the send queue (PUSH_PACK_SIZE); default 1. */
  packMax?: number;
  /** Batches in flight at once (each its own transaction); default 1. */
  concurrency?: number;
  /** Longest sleep without a look at the store. */
  recheckMs: number;
  errorBackoffMs: number;
  now?: () => Date;
}

export interface Descheduler {
  /** Someone scheduled pushes due at `earliest`: wake up if that is before the planned wake-up. */
  notify(earliest: Date): void;
  /**
   * Finish the batches in flight (each commits or rolls back), then resolve. Given `timeoutMs`, a
   * batch still waiting for RabbitMQ's confirms after that long (none come while RabbitMQ blocks
   * publishers in a memory or disk alarm) is given up: rolled back, its pushes stay stored for the
   * next release. A copy RabbitMQ took anyway is then released twice; the ledger sends it once.
   */
  stop(timeoutMs?: number): Promise<void>;
}

/**
 * Releases due pushes of one platform: claim and delete a batch (SKIP LOCKED), publish with
 * confirms, commit; repeat while batches come back full; then sleep until the next due time,
 * an earlier notification, or the re-check bound. Expired pushes are dropped and counted.
 * `concurrency` such loops run side by side (default 1), so one's database round trips overlap
 * another's wait for confirms; SKIP LOCKED keeps their batches apart.
 */
export function startDescheduler(deps: DeschedulerDeps): Descheduler {
  const timers = Array.from({ length: Math.max(1, deps.concurrency ?? 1) }, () => new WakeTimer(() => nowOf(deps).getTime()));
  let stopping = false;
  const givenUp = new AbortController();
  const worker = async (timer: WakeTimer): Promise<void> => {
    while (!stopping) {
      const released = await releaseOnce(deps, givenUp.signal).catch((err: unknown) => {
        if (err instanceof BatchGivenUp) {
          deps.logger.warn('descheduler stopping: a batch still waiting for RabbitMQ\'s confirms was rolled back; its pushes stay stored');
          return -1;
        }
        deps.metrics.batches.inc({ platform: deps.platform, outcome: 'failed' });
        deps.logger.error({ err }, 'descheduler batch failed: the rows stay stored and are retried');
        return -1;
      });
      if (stopping) break;
      if (released === deps.batchSize) continue;
      // Some rows but not a full batch: a wave is falling due, so more are due within
      // milliseconds; look again after the floor without asking the store for the next due time
      // (that query walks the same index as the claim, past every row released since the last
      // vacuum). Only an empty batch asks, and sleeps until then.
      await timer.sleep(released < 0 ? deps.errorBackoffMs : released > 0 ? MIN_SLEEP_MS : await sleepMs(deps));
    }
  };
  const loops = Promise.all(timers.map(worker));
  return {
    notify: (earliest) => timers.forEach((t) => t.wakeIf(earliest)),
    stop: async (timeoutMs) => {
      stopping = true;
      timers.forEach((t) => t.wake());
      if (timeoutMs !== undefined && (await within(loops, timeoutMs)) === TIMED_OUT) givenUp.abort();
      await loops;
    },
  };
}

/** The descheduler's clock (deps.now: PostgreSQL's in a service, DatabaseClock), else this process's. */
const nowOf = (deps: Pick<DeschedulerDeps, 'now'>): Date => deps.now?.() ?? new Date();

/** How long until the next stored push is due, bounded by recheckMs. */
async function sleepMs(deps: DeschedulerDeps): Promise<number> {
  const next = await deps.store.nextDueAt(deps.platform).catch(() => undefined);
  const now = nowOf(deps).getTime();
  if (next === undefined) return deps.recheckMs;
  // Due rows another descheduler holds are skipped by nextDueAt; a tiny floor guards the rest.
  return Math.min(deps.recheckMs, Math.max(MIN_SLEEP_MS, next.getTime() - now));
}

/** The shortest sleep between batches that were not full. */
const MIN_SLEEP_MS = 5;

/** A batch's publish abandoned by the descheduler's stop (its transaction then rolls back). */
class BatchGivenUp extends Error {
  constructor() {
    super('descheduler stopping: batch given up while waiting for confirms');
    this.name = 'BatchGivenUp';
  }
}

/** `publishing`, or BatchGivenUp once `givenUp` aborts (the publish goes on unheeded; its later failure is handled here). */
function unlessGivenUp(publishing: Promise<void>, givenUp: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(new BatchGivenUp());
    if (givenUp.aborted) onAbort();
    else givenUp.addEventListener('abort', onAbort, { once: true });
    void publishing.then(resolve, reject).finally(() => givenUp.removeEventListener('abort', onAbort));
  });
}

async function releaseOnce(deps: DeschedulerDeps, givenUp: AbortSignal): Promise<number> {
  const now = (): Date => nowOf(deps);
  let published: { live: DueRow[]; expired: number; at: Date } | undefined;
  const claimed = await deps.store.withDueBatch(
    deps.platform,
    now(),
    deps.batchSize,
    async (rows): Promise<ReleaseResult> => {
      const at = now().getTime();
      const live = rows.filter((r) => r.expiresAt === undefined || r.expiresAt.getTime() > at);
      const expired = rows.filter((r) => r.expiresAt !== undefined && r.expiresAt.getTime() <= at);
      await unlessGivenUp(deps.publisher.publishMany(live.map((r) => toSendMessage(deps.platform, r)), { packMax: deps.packMax ?? 1 }), givenUp);
      published = { live, expired: expired.length, at: now() };
      // Committed with the claim: a push leaves the store and becomes its job's `expired` together.
      return { outcomes: expired.map((r) => expiredOutcome(deps.platform, r)) };
    },
    (skipped) => recordSkipped(deps, skipped),
  );
  // Counted once committed: a batch whose commit failed is claimed, and counted, again.
  if (published !== undefined) recordBatch(deps, published.live, published.expired, published.at);
  return claimed;
}

/** Rows dropped unreleased at the claim (their job cancelled, their user opted out or muted): counted, by why. */
function recordSkipped(deps: DeschedulerDeps, skipped: SkippedCounts): void {
  for (const [why, n] of Object.entries(skipped)) {
    if (n === undefined || n === 0) continue;
    deps.metrics.pushes.inc({ platform: deps.platform, outcome: why }, n);
    deps.logger.info({ [why]: n }, `scheduled pushes dropped when due: ${why}`);
  }
}

/** Only expired rows are parsed (for their device id); released ones go out as the stored text. */
function expiredOutcome(platform: Platform, row: DueRow): PushOutcomeEntry {
  const deviceId = (JSON.parse(row.payload) as { deviceId?: unknown }).deviceId;
  return {
    pushId: row.pushId,
    jobId: row.jobId,
    outcome: 'expired',
    reason: `expired at ${row.expiresAt?.toISOString() ?? '?'} before it was released`,
    platform,
    ...(typeof deviceId === 'string' && { deviceId }),
  };
}

function recordBatch(deps: DeschedulerDeps, live: readonly DueRow[], expired: number, at: Date): void {
  const { platform, metrics, logger } = deps;
  metrics.batches.inc({ platform, outcome: 'released' });
  if (live.length > 0) metrics.pushes.inc({ platform, outcome: 'released' }, live.length);
  if (expired > 0) {
    metrics.pushes.inc({ platform, outcome: 'expired' }, expired);
    logger.info({ expired }, 'scheduled pushes expired before release: dropped');
  }
  for (const r of live) {
    metrics.lag.observe({ platform }, Math.max(0, at.getTime() - r.dueAt.getTime()) / 1000);
    if (r.trace) logger.info({ pushId: r.pushId, jobId: r.jobId, trace: true }, 'trace: descheduler released push');
  }
  logger.debug({ released: live.length, expired }, 'descheduler batch committed');
}

function toSendMessage(platform: Platform, row: DueRow): OutboundMessage {
  // Straight to the send queue: topic routing cost a fifth of RabbitMQ's capacity here (ADR 0005).
  // The stored text is the DevicePush the demuxer encoded; it is sent as is, unparsed.
  return { exchange: Exchanges.direct, routingKey: sendQueueFor(platform), body: Buffer.from(row.payload), contentType: 'application/json', messageId: row.pushId };
}
