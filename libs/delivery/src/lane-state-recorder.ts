import { LANE_REFRESH_MS, type ProviderLaneStore } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { ProviderLanes } from './provider-lanes.ts';

export interface LaneStateRecorder {
  /** No more writes; waits for the one under way. */
  stop(): Promise<void>;
}

/** A failed write is made again this long after it, doubling with each failure in a row … */
const RETRY_FIRST_MS = 1_000;
/** … up to this: within a few seconds of PostgreSQL's return, however long it was away. */
const RETRY_MAX_MS = 5_000;

/**
 * Keeps this pusher's lanes down in PostgreSQL (migration 0043) for the monitor's provider-down
 * alarm: the queues cannot show an outage, since a down lane's pushes are acked into the delay
 * queues. Written when the lanes say one down or up again (in the background: never on a push's
 * way, never a statement a push), and every `refreshMs` while any is down, so the rows of a pusher
 * that died go stale (LANE_STALE_MS). One write at a time, each of every lane down then: a change
 * told during one is written right after it. A write that fails (PostgreSQL away) is logged once a
 * spell and made again `retryMs` later, doubling up to `retryMaxMs` (1 s to 5 s), until one is
 * written: not at the next refresh, up to 30 s after PostgreSQL's return, since an outage of over
 * LANE_STALE_MS left every row stale, and a monitor reading them before that refresh would resolve
 * provider-down and raise it again at once.
 *
 * The rows are left at stop, to go stale: deleted, a rolling restart during an outage would
 * resolve the alarm and raise it again after its grace, once the new pusher took the lane down.
 */
export function recordLaneState(
  lanes: ProviderLanes,
  store: ProviderLaneStore,
  logger: Logger,
  { refreshMs = LANE_REFRESH_MS, retryMs = RETRY_FIRST_MS, retryMaxMs = RETRY_MAX_MS }: { refreshMs?: number; retryMs?: number; retryMaxMs?: number } = {},
): LaneStateRecorder {
  let writing: Promise<void> | undefined;
  /** A change told while a write was under way. */
  let changed = false;
  /** Writes failed in a row (0: the last one was written). */
  let failures = 0;
  /** The next try of a failed write. */
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;

  const write = (): void => {
    if (stopped) return;
    if (writing !== undefined) {
      changed = true;
      return;
    }
    clearTimeout(retry);
    retry = undefined;
    changed = false;
    writing = store
      .record(lanes.saidDown())
      .then(
        () => void (failures = 0),
        (err: unknown) => {
          if (failures === 0) logger.warn({ err }, "could not record the provider lanes down in PostgreSQL, where the monitor's provider-down alarm reads them: tried again every few seconds until written");
          failures++;
        },
      )
      .finally(() => {
        writing = undefined;
        if (stopped) return;
        // Of every lane down then, so a change told meanwhile is in it.
        if (failures > 0) {
          retry = setTimeout(write, Math.min(retryMs * 2 ** (failures - 1), retryMaxMs));
          retry.unref();
        } else if (changed) write();
      });
  };

  lanes.watch(write);
  const refresh = setInterval(() => {
    if (lanes.saidDown().length > 0) write();
  }, refreshMs);
  refresh.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(refresh);
      clearTimeout(retry);
      await writing;
    },
  };
}
