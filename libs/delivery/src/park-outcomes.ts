import { jsonObjectOf, Platforms, type Platform } from '@herald/contracts';
import type { PushOutcomeEntry } from '@herald/db';
import type { ParkedNotice } from '@herald/messaging';
import type { JobOutcomeStore } from './job-outcomes.ts';

/** The park code of a push the provider refused for good: counted as `failed` in its job's status. */
export const PROVIDER_REJECTED = 'provider-rejected';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The push a parked message carried, read leniently: one that broke its contract but still names
 * its push and job is counted against that job. Undefined when there is nothing to count it against.
 */
export function parkedPushOf(body: Buffer): Pick<PushOutcomeEntry, 'pushId' | 'jobId' | 'platform' | 'deviceId'> | undefined {
  const value = jsonObjectOf(body);
  if (value === undefined) return undefined;
  const { pushId, jobId, platform, deviceId } = value;
  if (typeof pushId !== 'string' || !UUID.test(pushId) || typeof jobId !== 'string' || jobId.length === 0) return undefined;
  return {
    pushId,
    jobId,
    ...(Platforms.includes(platform as Platform) && { platform: platform as Platform }),
    ...(typeof deviceId === 'string' && { deviceId }),
  };
}

/**
 * The send queues' onParked: every push the messaging lib parks (the pusher's own parks, a retry
 * that ran out, the delivery limit) becomes its job's outcome, `failed` when the provider refused
 * it for good, else `parked`, with the park's code and reason.
 */
export function recordParkedPushes(store: JobOutcomeStore): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const push = parkedPushOf(message.body);
    if (push === undefined) return;
    await store.recordOutcomes([{ ...push, outcome: code === PROVIDER_REJECTED ? 'failed' : 'parked', code, reason }]);
  };
}
