import { AppId, isJobId, isUuidText, jsonObjectOf, Platforms, type Platform } from '@herald/contracts';
import type { DeliveryLedger, PushOutcomeEntry } from '@herald/db';
import type { InboundMessage, ParkedNotice } from '@herald/messaging';
import type { JobOutcomeRecorder } from './job-outcomes.ts';
import type { PusherMetrics } from './pusher-metrics.ts';

/** The park code of a push the provider refused for good: counted as `failed` in its job's status. */
export const PROVIDER_REJECTED = 'provider-rejected';

/** A devices row id, as DevicePush.deviceId carries it. */
const DEVICE_ROW_ID = /^[0-9]{1,19}$/;

/** What a parked message carried, read leniently (parkedPushOf), and the app it names if that is an app id. */
type ParkedPush = Pick<PushOutcomeEntry, 'pushId' | 'jobId' | 'platform' | 'deviceId'> & { app?: string };

/**
 * The push a parked message carried, read leniently: one that broke its contract but still names
 * its push and job is counted against that job. Undefined when there is nothing to count it against.
 */
export function parkedPushOf(body: Buffer): ParkedPush | undefined {
  const value = jsonObjectOf(body);
  if (value === undefined) return undefined;
  const { pushId, jobId, platform, deviceId, app } = value;
  // Only what PostgreSQL can store: a NUL byte or an over-long id in the outcome refused every flush of the pusher's job status.
  if (typeof pushId !== 'string' || !isUuidText(pushId) || typeof jobId !== 'string' || !isJobId(jobId)) return undefined;
  return {
    pushId,
    jobId,
    ...(Platforms.includes(platform as Platform) && { platform: platform as Platform }),
    ...(typeof deviceId === 'string' && DEVICE_ROW_ID.test(deviceId) && { deviceId }),
    ...(AppId.safeParse(app).success && { app: app as string }),
  };
}

/**
 * The send queues' onParked: every push the messaging lib parks (the pusher's own parks, a retry
 * that ran out, the delivery limit) is counted in herald_pushes_total, `failed` when the provider
 * refused it for good, else `parked` (the alert HeraldPushesFailing reads both: a provider outage
 * ends in retries that run out), and with the pusher's outcome recorder becomes its job's outcome,
 * with the park's code and reason. Through the recorder, not a write of its own: the messaging lib
 * acks the input once the parked copy is confirmed, whatever this does, so an outcome PostgreSQL
 * refused (a failover) was lost and its job read `sending` for good; the recorder keeps it for the
 * next flush.
 */
export function onPushParked(platform: Platform, metrics: PusherMetrics, recorder: Pick<JobOutcomeRecorder, 'noteEntry' | 'flush'> | undefined): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const push = parkedPushOf(message.body);
    const outcome = code === PROVIDER_REJECTED ? 'failed' : 'parked';
    if (push === undefined) {
      metrics.pushes.inc({ platform, app: 'unknown', outcome });
      return;
    }
    const { app = 'unknown', ...entry } = push;
    metrics.pushes.inc({ platform, app, outcome });
    if (recorder === undefined) return;
    recorder.noteEntry({ ...entry, outcome, code, reason });
    await recorder.flush();
  };
}

/**
 * The send queues' alreadyDone: a push over the delivery limit that the ledger holds as done (a
 * part of a packed message sent before a sibling kept failing) is acked, not parked: parked, it
 * would count as parked and go again if replayed once its ledger entry was pruned.
 */
export function pushesAlreadyDone(ledger: Pick<DeliveryLedger, 'doneOf'>): (messages: readonly InboundMessage[]) => Promise<boolean[]> {
  return async (messages) => {
    const ids = messages.map((m) => parkedPushOf(m.body)?.pushId.toLowerCase());
    const done = await ledger.doneOf(ids.filter((id) => id !== undefined));
    return ids.map((id) => id !== undefined && done.has(id));
  };
}
