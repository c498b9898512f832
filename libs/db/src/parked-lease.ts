import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { takeLeaseRow } from './lease.ts';
import type { HeraldTables } from './tables.ts';

/** Another operator's parked operation (a CLI command, a dashboard action) holds the queue. */
export class ParkedQueueBusy extends Error {
  override readonly name = 'ParkedQueueBusy';
  constructor(
    readonly queue: string,
    readonly holder: string,
    readonly since: Date,
  ) {
    super(`${queue} is being read by ${holder} (since ${since.toISOString()}): a list, replay or purge holds the messages it reads until it ends, so another would miss them; try again when it is done`);
  }
}

/** The operation was interrupted (its `signal` aborted: an operator's Ctrl-C): its work stopped, or waited for up to stopGraceMs, and the lease released. */
export class ParkedLeaseInterrupted extends Error {
  override readonly name = 'ParkedLeaseInterrupted';
  constructor(readonly queue: string) {
    super(`interrupted: ${queue}'s lease released`);
  }
}

export interface ParkedLeaseOptions {
  /** How long to wait for another's operation to end before refusing (default 30 s). */
  waitMs?: number;
  /**
   * How long a taken lease holds without renewal (default DEFAULT_PARKED_LEASE_MS; renewed every
   * third of it).
   */
  ttlMs?: number;
  /**
   * Aborted, the wait ends, or the lease is released once `work` has stopped (give it the same
   * signal: parked operations stop at their next message or chunk, rejecting), or after
   * `stopGraceMs` if it has not (the caller then abandons it, exiting: its unacknowledged messages
   * go back when its connection closes), and the call rejects with ParkedLeaseInterrupted; work
   * that resolves within the grace had finished, and the call returns its value. Without it a CLI stopped
   * by Ctrl-C left its row for the lease's 90 s, and the next command waited 30 s and was refused
   * by a run no longer there; released before the work stopped, a replay went on republishing
   * with no lease held, and its last chunks' outcomes met a closed database pool.
   */
  signal?: AbortSignal;
  /** How long an aborted `work` is waited for before the lease goes regardless (default 2 s). */
  stopGraceMs?: number;
  /**
   * Which rejections of work aborted by `signal` are its stop (the parked sweeps' ParkedSweepStopped):
   * any other within the grace is the work's own failure, thrown as it is (a replay's copies refused
   * before it stopped, and why). Unset: every rejection after the abort is the interruption.
   */
  isStop?: (err: unknown) => boolean;
}

const POLL_MS = 250;
/** ParkedLeaseOptions.stopGraceMs' default: a chunk's copies confirmed, normally a few milliseconds. */
const STOP_GRACE_MS = 2_000;

/**
 * A parked operation's lease, 90 s: longer than RabbitMQ takes to hand back the messages of a
 * holder that vanished without closing its connection (a dropped VPN: its 60 s heartbeat timeout),
 * so no one reads the queue while they are still held. A holder that exits, even killed, closes
 * its connection and its messages go back at once; its row lasts out the 90 s.
 */
export const DEFAULT_PARKED_LEASE_MS = 90_000;

/**
 * Runs `work` (a list, show, replay or purge of `queue`'s parked messages) while holding the
 * queue's lease (a `leases` row, `parked:<queue>`), shared by every CLI and monitor. Each such
 * operation holds the messages it has read unacknowledged until it ends, so one running beside
 * another saw fewer or none ("replayed 0 of 0", a list of "(none)") and said so as success. A
 * holder that dies loses the lease within `ttlMs`. A `holder` names one run of one process: it may take the
 * lease again, so it runs its own operations on a queue one at a time itself.
 */
export async function withParkedLease<T>(db: Kysely<HeraldTables>, queue: string, holder: string, work: () => Promise<T>, opts: ParkedLeaseOptions = {}): Promise<T> {
  const name = `parked:${queue}`;
  const ttlMs = opts.ttlMs ?? DEFAULT_PARKED_LEASE_MS;
  const take = (): Promise<boolean> => takeLeaseRow(db, name, holder, ttlMs);
  const waitUntil = performance.now() + (opts.waitMs ?? 30_000);
  const { signal } = opts;
  const interrupted = (): ParkedLeaseInterrupted => new ParkedLeaseInterrupted(queue);
  while (!(await take())) {
    if (signal?.aborted === true) throw interrupted();
    if (performance.now() >= waitUntil) {
      const { rows } = await sql<{ holder: string; acquired_at: Date }>`select holder, acquired_at from leases where name = ${name}`.execute(db);
      const other = rows[0];
      // Let go between the two statements: ask once more.
      if (other === undefined && (await take())) break;
      throw new ParkedQueueBusy(queue, other?.holder ?? 'another operation', other?.acquired_at ?? new Date());
    }
    await sleep(POLL_MS);
  }
  if (signal?.aborted === true) {
    await release(db, name, holder);
    throw interrupted();
  }
  // One renewal at a time, each awaited before the next (and before the release): a renewal
  // answered after the release would take the lease again for a holder that is done.
  let done = false;
  let renewing: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const renew = (): void => {
    timer = setTimeout(() => {
      renewing = take()
        .catch(() => undefined)
        .finally(() => {
          if (!done) renew();
        });
    }, ttlMs / 3);
  };
  renew();
  let onAbort: (() => void) | undefined;
  try {
    // Inside the try: work that throws before it returns its promise (a bad argument) still lets
    // the lease go, and stops its renewals (left running, they kept the CLI alive for good).
    const working = work();
    if (signal === undefined) return await working;
    const aborted = new Promise<void>((resolve) => {
      onAbort = resolve;
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // Work abandoned after the grace may still fail: nobody waits for it any more.
    const finished = working.then(
      (value) => ({ value }),
      (err: unknown) => {
        if (opts.isStop !== undefined && !opts.isStop(err)) throw err;
        return undefined;
      },
    );
    // Raced only once aborted: a failure of work never aborted is the first race's to throw.
    finished.catch(() => undefined);
    const first = await Promise.race([working.then((value) => ({ value })), aborted.then(() => undefined)]);
    if (first !== undefined) return first.value;
    // Work that ends within the grace by finishing (it was past its last message) is done, not
    // interrupted: an operation stopped early rejects (the parked sweeps' ParkedSweepStopped); one
    // that fails otherwise (isStop) throws its own error.
    const late = await Promise.race([finished, sleep(opts.stopGraceMs ?? STOP_GRACE_MS).then(() => undefined)]);
    if (late !== undefined) return late.value;
    throw interrupted();
  } finally {
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    done = true;
    clearTimeout(timer);
    await renewing;
    await release(db, name, holder);
  }
}

const release = (db: Kysely<HeraldTables>, name: string, holder: string): Promise<unknown> =>
  sql`delete from leases where name = ${name} and holder = ${holder}`.execute(db).catch(() => undefined);
