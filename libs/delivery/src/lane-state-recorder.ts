import { LANE_REFRESH_MS, type ProviderLaneStore } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { ProviderLanes } from './provider-lanes.ts';

export interface LaneStateRecorder {
  /** No more writes; waits for the one under way. */
  stop(): Promise<void>;
}

/**
 * Keeps this pusher's lanes down in PostgreSQL (migration 0043) for the monitor's provider-down
 * alarm: the queues cannot show an outage, since a down lane's pushes are acked into the delay
 * queues. Written when the lanes say one down or up again (in the background: never on a push's
 * way, never a statement a push), and every `refreshMs` while any is down, so the rows of a pusher
 * that died go stale (LANE_STALE_MS). One write at a time, each of every lane down then: a change
 * told during one is written right after it. A write that fails (PostgreSQL away) is logged once a
 * spell and made again at the next refresh.
 *
 * The rows are left at stop, to go stale: deleted, a rolling restart during an outage would
 * resolve the alarm and raise it again after its grace, once the new pusher took the lane down.
 */
export function recordLaneState(lanes: ProviderLanes, store: ProviderLaneStore, logger: Logger, refreshMs = LANE_REFRESH_MS): LaneStateRecorder {
  let writing: Promise<void> | undefined;
  /** A change told while a write was under way. */
  let changed = false;
  /** The last write failed: the next refresh writes, whatever is down. */
  let failed = false;
  let stopped = false;

  const write = (): void => {
    if (stopped) return;
    if (writing !== undefined) {
      changed = true;
      return;
    }
    changed = false;
    writing = store
      .record(lanes.saidDown())
      .then(
        () => void (failed = false),
        (err: unknown) => {
          if (!failed) logger.warn({ err }, "could not record the provider lanes down in PostgreSQL, where the monitor's provider-down alarm reads them: tried again at each refresh");
          failed = true;
        },
      )
      .finally(() => {
        writing = undefined;
        if (changed && !failed) write();
      });
  };

  lanes.watch(write);
  const refresh = setInterval(() => {
    if (failed || lanes.saidDown().length > 0) write();
  }, refreshMs);
  refresh.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(refresh);
      await writing;
    },
  };
}
