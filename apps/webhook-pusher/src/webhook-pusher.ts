import {
  WebhookDelivery,
  WebhookHeaders,
  decodeWith,
  destinationOf,
  jsonObjectOf,
  signWebhook,
  webhookBodyOf,
} from '@herald/contracts';
import type { SubscriptionRow } from '@herald/db';
import { DeliveredRecorder, keepClaims, unrecordedOf, waitWindow, type Ledger, type PusherMetrics, type WaitWindow } from '@herald/delivery';
import type { Logger } from '@herald/logging';
import { webhookOwnerHeaders, type Decided, type InboundMessage, type Outcome, type ParkedNotice } from '@herald/messaging';
import type { HostSlots } from './host-slots.ts';
import type { SubscriptionCache } from './subscription-cache.ts';
import type { WebhookMetrics } from './webhook-metrics.ts';
import type { WebhookResult, WebhookSender } from './webhook-sender.ts';
import { noteResults, type FailureTracking } from './failure-tracking.ts';

export interface WebhookPusherDeps {
  subscriptions: SubscriptionCache;
  tracking: FailureTracking;
  sender: WebhookSender;
  slots: HostSlots;
  ledger: Ledger;
  metrics: PusherMetrics;
  webhookMetrics: WebhookMetrics;
  logger: Logger;
  /** Identifies this process in the ledger's claims. */
  owner: string;
  leaseMs: number;
  /** Fleet-wide pacing (`herald limits set --platform webhook [--app host:port]`). */
  limiter?: { acquire(n: number, signal?: AbortSignal, app?: string, booked?: (turnInMs: number) => void): Promise<boolean> };
  /** Aborted at shutdown: nothing keeps waiting for budget or a host slot. */
  signal?: AbortSignal;
  /** Aborted once the shutdown's bound has passed: recording delivered webhooks stops trying (as PusherDeps.recordingStop). */
  recordingStop?: AbortSignal;
  now?: () => Date;
}

type Ready = { index: number; delivery: WebhookDelivery; sub: SubscriptionRow; attempt: number };
/** Not sent: no budget or host slot within the wait bound (deferred, no attempt spent). */
/**
 * unpaced: no budget within the wait bound (bookedMs: the host's own budget is booked that far
 * ahead; stopping: the wait ended at shutdown); host-busy: no connection slot.
 */
type NotSent = { kind: 'unpaced'; bookedMs: number; stopping?: true } | { kind: 'host-busy' };
export type Sent = WebhookResult | NotSent;
const ack: Outcome = { kind: 'ack' };
const PLATFORM = 'webhook';

/**
 * How long a batch's deliveries are waited for together: those answered by then are recorded and
 * settled in one go (one ledger write, one release); each later one on its own once answered, so a
 * receiver that hangs holds its own deliveries' acks, not the batch's (every receiver's deliveries
 * waited for its timeout, and the prefetch filled with batches held so: the whole pusher slowed to
 * a few hundred deliveries every timeout).
 */
export const SETTLE_TOGETHER_MS = 1_000;
/** How long a late answer waits for others to be settled with (lateSettler). */
const LATE_GROUP_MS = 20;
/**
 * How long a host must have been slow (no answer in time since a timeout or a failed connection)
 * before a delivery refused a slot spends an attempt: one reset on a kept-alive socket of a busy,
 * answering host marks it slow until its next answer, a moment later, and its waiters were each
 * charged an attempt for it. WEBHOOK_TIMEOUT_MS' default.
 */
const NOT_ANSWERING_AFTER_MS = 5_000;

/**
 * WebhookDelivery → signed POST to the subscription's URL. Claim in the ledger (by notification
 * id), send each delivery concurrently under its host's slot bound, record, then let the
 * messaging lib ack / retry / park (each delivery answered late, once answered: Decided).
 */
export function createWebhookPusherHandler(deps: WebhookPusherDeps) {
  return async (messages: readonly InboundMessage[]): Promise<Decided[]> => {
    const outcomes: Decided[] = messages.map(() => ack);
    const decoded: Array<{ index: number; delivery: WebhookDelivery; attempt: number }> = [];
    for (const [index, message] of messages.entries()) {
      const parsed = decodeWith(WebhookDelivery, message.body);
      if (parsed.ok) decoded.push({ index, delivery: parsed.value, attempt: message.attempt });
      else outcomes[index] = park(deps, undefined, parsed.reason.startsWith('malformed') ? 'malformed-json' : 'schema', parsed.reason);
    }
    const subs = await deps.subscriptions.getMany(decoded.map((d) => d.delivery.subscriptionId));
    const ready: Ready[] = [];
    for (const d of decoded) {
      const sub = subs.get(d.delivery.subscriptionId);
      if (sub === undefined) outcomes[d.index] = dropped(deps, d.delivery);
      else if (!sub.enabled) outcomes[d.index] = park(deps, sub, 'subscription-disabled', `subscription ${sub.id} is disabled${sub.disabledReason !== null ? ` (${sub.disabledReason})` : ''}; enable it and replay`);
      else ready.push({ ...d, sub });
    }
    const toSend = await claim(ready, outcomes, deps);
    if (toSend.length === 0) return outcomes;
    const window = sendWindow(deps, Date.now());
    const recorder = new DeliveredRecorder(deps.ledger, deps.logger, deps.recordingStop, unrecordedOf(deps.metrics, PLATFORM));
    // Claims stay alive while the batch is at work, so a slow answer is not sent twice (claim-keeper.ts).
    const stopKeeping = keepClaims(deps.ledger, toSend.map((r) => r.delivery.notificationId), deps.owner, deps.leaseMs, deps.logger);
    const answers: Array<Sent | undefined> = toSend.map(() => undefined);
    const sends = toSend.map((r, i) =>
      send(r, deps, window.signal).then((result) => {
        if (result.kind === 'delivered') recorder.add({ pushId: r.delivery.notificationId, outcome: `delivered: HTTP ${result.status}` });
        answers[i] = result;
        return result;
      }),
    );
    const all = Promise.all(sends);
    void Promise.allSettled(sends).then(() => window.close());
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, SETTLE_TOGETHER_MS)))]).finally(() => clearTimeout(timer));
    } catch (err) {
      // A send that threw fails the batch (requeued or deferred by the consumer): its claims are
      // no longer kept (renewed for good, a copy would find them held elsewhere at every turn).
      stopKeeping();
      throw err;
    }
    // Which are late is decided here, once: more answers may come while the others are settled.
    const answered: Ready[] = [];
    const results: Sent[] = [];
    const laters: Array<Promise<Outcome>> = [];
    const settleLate = lateSettler(recorder, deps);
    toSend.forEach((r, i) => {
      const result = answers[i];
      if (result !== undefined) {
        answered.push(r);
        results.push(result);
      } else {
        const later = (sends[i] as Promise<Sent>).then((late) => settleLate(r, late));
        // Handled by the consumer once returned; one failing before then (or with this batch's
        // settling, which throws the batch back) must not end the process as unhandled.
        later.catch(() => undefined);
        laters.push(later);
        outcomes[r.index] = later;
      }
    });
    const settling = settle(answered, results, recorder, deps);
    void Promise.allSettled([settling, ...laters]).then(stopKeeping);
    const together = await settling;
    answered.forEach((r, i) => (outcomes[r.index] = together[i] ?? ack));
    return outcomes;
  };
}

/**
 * Settles the late answers of a batch that come within LATE_GROUP_MS of each other together (one
 * ledger write, one release, one failure-tracking round), each caller getting its own outcome: a
 * receiver that always takes over SETTLE_TOGETHER_MS would otherwise cost statements per delivery.
 */
function lateSettler(recorder: DeliveredRecorder, deps: WebhookPusherDeps): (r: Ready, result: Sent) => Promise<Outcome> {
  let waiting: Array<{ r: Ready; result: Sent; resolve: (o: Outcome) => void; reject: (err: unknown) => void }> = [];
  const flush = (): void => {
    const group = waiting;
    waiting = [];
    settle(
      group.map((g) => g.r),
      group.map((g) => g.result),
      recorder,
      deps,
    ).then(
      (outcomes) => group.forEach((g, i) => g.resolve(outcomes[i] ?? ack)),
      (err: unknown) => group.forEach((g) => g.reject(err)),
    );
  };
  return (r, result) =>
    new Promise((resolve, reject) => {
      if (waiting.length === 0) setTimeout(flush, LATE_GROUP_MS);
      waiting.push({ r, result, resolve, reject });
    });
}

/** Ledger claims: a notification already delivered is acked unsent; one held elsewhere comes back later. */
async function claim(ready: Ready[], outcomes: Decided[], deps: WebhookPusherDeps): Promise<Ready[]> {
  if (ready.length === 0) return [];
  const claims = await deps.ledger.claim([...new Set(ready.map((r) => r.delivery.notificationId))], deps.owner, deps.leaseMs);
  const inBatch = new Set<string>();
  return ready.filter((r) => {
    const id = r.delivery.notificationId;
    const state = inBatch.has(id) ? 'done' : claims.get(id);
    inBatch.add(id);
    if (state === 'claimed') return true;
    if (state === 'done') {
      deps.metrics.pushes.inc({ platform: PLATFORM, app: r.sub.team, outcome: 'duplicate' });
      outcomes[r.index] = ack;
    } else {
      outcomes[r.index] = { kind: 'defer', code: 'in-flight', reason: `notification ${id} is claimed by another pusher`, delayMs: Math.min(deps.leaseMs, 5_000), headers: webhookOwnerHeaders(r.sub) };
    }
    return false;
  });
}

/** Waiting for budget or a host slot ends at half a lease (the claim must outlive the send) or at shutdown. */
function sendWindow(deps: WebhookPusherDeps, claimedAt: number): WaitWindow {
  return waitWindow(claimedAt + deps.leaseMs / 2, deps.signal);
}

async function send(r: Ready, deps: WebhookPusherDeps, window: AbortSignal): Promise<Sent> {
  const host = destinationOf(r.sub.callbackUrl);
  let bookedMs = 0;
  const unpaced = (): NotSent => ({ kind: 'unpaced', bookedMs, ...(deps.signal?.aborted === true && { stopping: true }) });
  if (deps.limiter !== undefined && !(await deps.limiter.acquire(1, window, host, (turnInMs) => (bookedMs = turnInMs)))) return unpaced();
  const release = await deps.slots.acquire(host, window);
  if (release === undefined && window.aborted) return unpaced();
  // A host that has not answered for a while: the delivery takes its turn of the retry schedule as a failed
  // attempt (parked retries-exhausted at the last), as it would have timing out. Deferred unspent
  // instead, a second apart and for good, the deliveries beyond its few slots were neither
  // delivered nor parked, and filled the queue every receiver shares until it was disabled a day on.
  if (release === undefined && (deps.slots.slowForMs(host) ?? 0) >= NOT_ANSWERING_AFTER_MS) return { kind: 'transient', reason: `host ${host} is not answering (its last request timed out or could not connect): not tried, its few waiting places taken` };
  if (release === undefined) return { kind: 'host-busy' };
  try {
    const body = Buffer.from(JSON.stringify(webhookBodyOf(r.delivery)));
    const signedAt = deps.now?.() ?? new Date();
    const timestamp = Math.floor(signedAt.getTime() / 1000);
    // After a rotation, a second signature by the previous secret until it expires.
    const previous = r.sub.previousSecret !== null && r.sub.previousSecret.until > signedAt ? r.sub.previousSecret.secret : undefined;
    const headers = {
      [WebhookHeaders.signature]: signWebhook(r.sub.secret, timestamp, body, previous),
      [WebhookHeaders.notificationId]: r.delivery.notificationId,
      [WebhookHeaders.attempt]: String(r.attempt),
    };
    const started = process.hrtime.bigint();
    const result = await deps.sender.post(r.sub.callbackUrl, body, headers);
    deps.metrics.providerSeconds.observe({ platform: PLATFORM }, Number(process.hrtime.bigint() - started) / 1e9);
    if (r.delivery.trace === true) {
      deps.logger.info({ trace: true, notificationId: r.delivery.notificationId, subscriptionId: r.sub.id, attempt: r.attempt, result }, 'trace: webhook POST answered');
    }
    const answerClass = responseClass(result);
    deps.webhookMetrics.responses.inc({ class: answerClass });
    deps.slots.noteSpeed(host, answerClass === 'timeout' || answerClass === 'connection');
    return result;
  } finally {
    release();
  }
}

function responseClass(result: WebhookResult): string {
  if (result.status !== undefined) return `${String(result.status).charAt(0)}xx`;
  return result.kind !== 'delivered' && result.reason.startsWith('timed out') ? 'timeout' : 'connection';
}

/**
 * Outcomes per result, once the delivered ones are recorded; release the claims of what was not
 * delivered; track failing subscriptions.
 */
async function settle(sent: Ready[], results: Sent[], recorder: DeliveredRecorder, deps: WebhookPusherDeps): Promise<Outcome[]> {
  if (sent.length === 0) return [];
  await recorder.flush();
  const release: string[] = [];
  const observedAt = Date.now();
  const outcomes = sent.map((r, i): Outcome => {
    const result = results[i] as Sent;
    const label = { platform: PLATFORM, app: r.sub.team };
    const id = r.delivery.notificationId;
    switch (result.kind) {
      case 'delivered':
        deps.metrics.pushes.inc({ ...label, outcome: 'delivered' });
        // Never below 0: the fan-out's host may run ahead of this one (a negative observation lowers the histogram's _sum, read as a counter reset).
        deps.metrics.latency.observe({ platform: PLATFORM }, Math.max(0, observedAt - Date.parse(r.delivery.queuedAt)) / 1000);
        return ack;
      case 'unpaced':
      case 'host-busy':
        release.push(id);
        if (result.kind === 'host-busy') deps.webhookMetrics.hostBusy.inc();
        return notSentOutcome(result, r.sub);
      case 'transient':
        release.push(id);
        // On its last attempt it is parked (counted then), not retried.
        if (r.attempt < deps.tracking.lastAttempt) deps.metrics.pushes.inc({ ...label, outcome: 'retried' });
        deps.logger.info({ notificationId: id, subscriptionId: r.sub.id, attempt: r.attempt, reason: result.reason }, 'webhook delivery failed; will retry');
        // Whose it is, on every copy this pusher makes (the fan-out set it on the first): its park,
        // retries-exhausted once its attempts are spent, names them for herald parked --app / --subscription.
        return { kind: 'retry', code: 'transient', reason: result.reason, ...(result.retryAfterMs !== undefined && { delayMs: result.retryAfterMs }), headers: webhookOwnerHeaders(r.sub) };
      case 'permanent':
        release.push(id);
        return park(deps, r.sub, 'receiver-rejected', result.reason, id);
    }
  });
  await Promise.all([release.length > 0 ? deps.ledger.release(release, deps.owner) : undefined, noteResults(sent, results, deps)]);
  return outcomes;
}

/** Deferred, no attempt spent: why it was not sent, and when to try again. */
function notSentOutcome(result: NotSent, sub: SubscriptionRow): Outcome {
  const headers = webhookOwnerHeaders(sub);
  if (result.kind === 'host-busy') return { kind: 'defer', code: result.kind, reason: `host ${destinationOf(sub.callbackUrl)} is busy`, delayMs: 1000, headers };
  if (result.bookedMs > 0) return { kind: 'defer', code: result.kind, reason: `the host's own budget is booked ${Math.ceil(result.bookedMs)} ms ahead`, delayMs: Math.ceil(result.bookedMs), headers };
  if (result.stopping === true) return { kind: 'defer', code: 'stopping', reason: 'the pusher stopped before sending it', delayMs: 1000, headers };
  return { kind: 'defer', code: result.kind, reason: 'no outbound budget within the wait bound', delayMs: 1000, headers };
}

/**
 * Counted in herald_pushes_total once the park is confirmed, by webhookParkCounter. Without a
 * subscription (a body that is no WebhookDelivery) the parked copy names no team.
 */
function park(deps: WebhookPusherDeps, sub: SubscriptionRow | undefined, code: string, reason: string, notificationId?: string): Outcome {
  deps.logger.warn({ notificationId, subscriptionId: sub?.id, code, reason }, 'webhook delivery parked');
  return { kind: 'park', code, reason, ...(sub !== undefined && { headers: webhookOwnerHeaders(sub) }) };
}

/** The subscription was deleted after the change was queued: nobody wants it any more. */
function dropped(deps: WebhookPusherDeps, d: WebhookDelivery): Outcome {
  deps.metrics.pushes.inc({ platform: PLATFORM, app: 'unknown', outcome: 'dropped' });
  deps.logger.info({ notificationId: d.notificationId, subscriptionId: d.subscriptionId }, 'subscription no longer exists: webhook delivery dropped');
  return ack;
}

/**
 * The send queue's onParked: every webhook delivery parked (the handler's own parks, retries that
 * ran out against a receiver that keeps failing, the delivery limit) counted as `parked` under its
 * subscription's team, where HeraldPushesFailing looks.
 */
export function webhookParkCounter(subscriptions: Pick<SubscriptionCache, 'getMany'>, metrics: PusherMetrics): (notice: ParkedNotice) => Promise<void> {
  return async ({ message }) => {
    const id = jsonObjectOf(message.body)?.['subscriptionId'];
    const sub = typeof id === 'string' ? (await subscriptions.getMany([id]).catch(() => undefined))?.get(id) : undefined;
    metrics.pushes.inc({ platform: PLATFORM, app: sub?.team ?? 'unknown', outcome: 'parked' });
  };
}
