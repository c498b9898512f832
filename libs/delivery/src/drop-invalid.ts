import type { DevicePush } from '@herald/contracts';
import { deviceKey, type DeviceKey } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { Outcome } from '@herald/messaging';
import type { PusherMetrics } from './pusher-metrics.ts';
import type { JobOutcomeRecorder } from './job-outcomes.ts';

export interface DeviceLiveness {
  /** deviceKey()s of the given devices that are dead now (one query). */
  invalidTokens(keys: readonly DeviceKey[]): Promise<Set<string>>;
}

interface DropDeps {
  devices: DeviceLiveness;
  metrics: PusherMetrics;
  logger: Logger;
  outcomes?: JobOutcomeRecorder;
}

/**
 * One lookup for the whole batch: pushes queued for a token that has since been invalidated (or
 * unregistered) are acked unsent and counted as `invalid`. Returns the pushes still to send.
 */
export async function dropInvalid<T extends { index: number; push: DevicePush }>(ready: T[], outcomes: Outcome[], deps: DropDeps): Promise<T[]> {
  if (ready.length === 0) return ready;
  const dead = await deps.devices.invalidTokens(ready.map((r) => r.push));
  if (dead.size === 0) return ready;
  return ready.filter(({ index, push }) => {
    if (!dead.has(deviceKey(push))) return true;
    outcomes[index] = { kind: 'ack' };
    deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'invalid' });
    deps.outcomes?.note(push, 'invalid', { code: 'invalidated', reason: 'the token was invalidated or unregistered after the push was queued' });
    deps.logger.info({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: push.token }, 'push dropped: token invalidated since it was queued');
    return false;
  });
}
