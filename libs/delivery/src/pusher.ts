import {
  DevicePush,
  Exchanges,
  decodeWith,
  endpointHostProblem,
  invalidationQueueFor,
  pushAsOf,
  pushServiceOf,
  type Invalidation,
  type Platform,
} from '@herald/contracts';
import {
  AppAdminError,
  isDatabaseUnavailable,
  SecretBoxError,
  type AppRow,
  type CurrentSubscription,
  type LedgerCompletion,
  type LedgerPush,
  type LiveClaimResult,
  type LiveClaims,
  type MovedTo,
} from '@herald/db';
import { logSummary, type Logger } from '@herald/logging';
import { LONGEST_DELAY_MS, type InboundMessage, type Outcome, type Publisher } from '@herald/messaging';
import { isRefusal, type PushProvider, type SendResult, type SendTarget } from '@herald/providers';
import { unrecordedOf, type PusherMetrics } from './pusher-metrics.ts';
import { completeDurably, DeliveredRecorder, type RecordedBatch } from './ledger-record.ts';
import { waitWindow, type WaitWindow } from './wait-window.ts';
import { keepClaims } from './claim-keeper.ts';
import type { ProviderSource } from './provider-pool.ts';
import { keptToken, settingsKeyOf, type AppBans } from './app-ban.ts';
import { outcomeEntry, type JobOutcomeRecorder } from './job-outcomes.ts';
import { PROVIDER_REJECTED } from './park-outcomes.ts';
import type { Held, ProviderLanes } from './provider-lanes.ts';

export interface Ledger {
  claim(pushIds: readonly string[], owner: string, leaseMs: number): Promise<Map<string, 'claimed' | 'done' | 'in-flight'>>;
  complete(entries: readonly LedgerCompletion[]): Promise<void>;
  release(pushIds: readonly string[], owner: string): Promise<void>;
  renew(pushIds: readonly string[], owner: string): Promise<number>;
}

/** A device pusher's ledger: its claim also finds the pushes whose device is dead now. */
export interface DeviceLedger extends Omit<Ledger, 'claim'> {
  /**
   * One statement: claims the pushes, except those whose device is dead now ('dead', not claimed)
   * or whose token was replaced by a live one ('moved', LiveClaims.moves);
   * `webSubscriptions`: with the subscription each claimed web push's device holds now.
   */
  claimLive(pushes: readonly LedgerPush[], owner: string, leaseMs: number, options?: { webSubscriptions?: boolean }): Promise<LiveClaims>;
}

export interface PusherDeps {
  platform: Platform;
  /**
   * The last attempt a message gets (PUSHER_RETRY_DELAYS_MS.length + 1): a transient failure on it is
   * parked (retries exhausted) by the consumer, and counted `parked` then, not `retried` as well.
   */
  lastAttempt?: number;
  /** The provider for a push's app: its own credentials, or the process-level provider (provider-pool.ts). */
  providers: ProviderSource;
  /** Apps banned for credential or topic errors have their pushes parked (app-ban.ts). */
  bans?: AppBans;
  /**
   * Final outcome per push, for the job status the HTTP API reports (job-outcomes.ts); a delivered
   * push's is written with its ledger record instead (record()), and parks are recorded by the
   * consumer's onParked (park-outcomes.ts). Unset: no job status is kept.
   */
  outcomes?: JobOutcomeRecorder;
  /** Pushes for tokens invalidated since they were queued are dropped, not sent (found by the claim). */
  ledger: DeviceLedger;
  /** Jobs cancelled lately (cancelled-jobs.ts): their queued pushes are dropped unsent, recorded as cancelled. */
  cancelled?: { has(jobId: string): boolean };
  apps: { get(id: string): Promise<AppRow | undefined> };
  publisher: Publisher;
  metrics: PusherMetrics;
  logger: Logger;
  /** Identifies this process in the ledger's claims. */
  owner: string;
  /** The least wait before the next attempt of a push a provider answered with a server error it asks to wait out (APNs 5xx, `serverError`): APNS_SERVER_ERROR_RETRY_MS. */
  serverErrorRetryMs?: number;
  /** How long a claim protects a push being sent; after it, another pusher may take over. */
  leaseMs: number;
  /**
   * A push whose user's opt-outs and mutes were read longer ago than this (toClaim) has them, and its
   * job's cancellation, asked again in its claim (PREFERENCES_RECHECK_AFTER_MS, whose default this
   * also is unset: specs and benchmarks). Others were read moments ago, and their claim reads no
   * job, opt-out or mute.
   */
  preferencesRecheckMs?: number;
  /**
   * Fleet-wide pacing: one token per push right before it is sent (none for a push its provider's
   * prepare refuses: no request is made for it); false means "not now" (deferred:
   * until the app's pause ends when a provider's Retry-After paused it, see pausedFor; to its turn
   * when its app's own budget, or the rate a provider's throttle slowed it to, had more waiting than
   * it serves, told to `booked`). Every provider answer is observed with its push's app.
   */
  limiter?: {
    acquire(n: number, signal?: AbortSignal, app?: string, booked?: (turnInMs: number, cause: 'budget' | 'slowed') => void, service?: string): Promise<boolean>;
    observe?(result: SendResult, app: string, service?: string): void;
    pausedFor?(app: string, service?: string): number;
  };
  /**
   * Each lane's breaker (provider-lanes.ts): a push of a lane that is down is held (deferred, no
   * attempt spent) until PROVIDER_DOWN_HOLD_MS after it was due, then parked. Unset: none is held.
   */
  lanes?: ProviderLanes;
  /** Aborted at shutdown: no push keeps waiting for the limiter. */
  signal?: AbortSignal;
  /**
   * Aborted once the shutdown's bound has passed: recording pushes a provider accepted stops
   * trying (ledger-record.ts). Not `signal`: a database back within the bound still records them,
   * where giving up at once sent each again after its lease. Absent: it tries as long as it lives.
   */
  recordingStop?: AbortSignal;
  /**
   * The clock expiry, holds and delivery latency are judged by: PostgreSQL's (DatabaseClock.now,
   * runPusher), as the demuxer and the deschedulers judge due and expiry, so a host whose clock is
   * off neither drops pushes released on time as expired nor sends expired ones. Unset: this process's.
   */
  now?: () => Date;
}

const nowOf = (deps: PusherDeps): Date => deps.now?.() ?? new Date();

/** `attempt`: the delivery's attempt (1 on the first), which a provider's exponential back-off grows with. */
/** `sentBefore`: the push was sent before (sentBeforeOf), so its answer says less about its lane than a fresh one's. */
/** `service`: its pacing lane (pacingLaneOf), worked out once at its admission; `lane`: its breaker's (laneOf). */
type Claimable = { index: number; attempt: number; sentBefore: boolean; push: DevicePush; topic: string | undefined; app: AppRow; service: string | undefined; lane: string; sentNow?: true };
const ack: Outcome = { kind: 'ack' };
/**
 * Not sent: no budget within the wait bound, or the pusher is stopping (`stopping`), or
 * (pausedMs > 0) the app is paused, or (bookedMs > 0) its app's own budget, or the rate a throttle
 * slowed it to (`slowed`), is booked that far ahead.
 */
type Unpaced = { kind: 'unpaced'; pausedMs: number; bookedMs: number; slowed?: true; stopping?: true };
/** Not sent: its job was cancelled while the push waited for budget. */
type CancelledWhileWaiting = { kind: 'cancelled' };
type ExpiredWhileWaiting = { kind: 'expired-waiting' };
type DisabledWhileWaiting = { kind: 'app-disabled' };
type Sent = SendResult | Unpaced | CancelledWhileWaiting | ExpiredWhileWaiting | DisabledWhileWaiting | Held;
const unpaced = (deps: PusherDeps, app: string, service: string | undefined, bookedMs = 0, slowed = false): Unpaced => ({
  kind: 'unpaced',
  pausedMs: deps.limiter?.pausedFor?.(app, service) ?? 0,
  bookedMs,
  ...(slowed && { slowed: true }),
  ...(deps.signal?.aborted === true && { stopping: true }),
});

/**
 * DevicePush → provider. Claim in the ledger, send, record, then let the messaging lib ack.
 * A push already done is acked unsent; one claimed elsewhere is retried later.
 */
export function createPusherHandler(deps: PusherDeps) {
  const now = (): Date => nowOf(deps);
  // One write stream to the ledger for every batch in flight (ledger-record.ts).
  const recorder = new DeliveredRecorder(deps.ledger, deps.logger, deps.recordingStop, unrecordedOf(deps.metrics, deps.platform));
  return async (messages: readonly InboundMessage[]): Promise<Outcome[]> => {
    const outcomes: Outcome[] = messages.map(() => ack);
    const ready: Claimable[] = [];
    for (const [index, message] of messages.entries()) {
      const checked = await admit(message, deps, now());
      if ('kind' in checked) outcomes[index] = checked;
      else ready.push({ index, attempt: message.attempt, sentBefore: sentBeforeOf(message), ...checked });
    }
    if (ready.length === 0) return flushed(outcomes, deps);
    const claimedAt = Date.now();
    const askedBefore = now().getTime() - (deps.preferencesRecheckMs ?? DEFAULT_PREFERENCES_RECHECK_MS);
    const claims = await claimFollowingMoves(ready, askedBefore, deps, outcomes);
    const inBatch = new Set<string>();
    const toSend = ready.filter((r) => {
      if (claims.parked.has(r)) return false;
      // A second copy in the same batch (a job published twice): the first copy carries it.
      if (inBatch.has(r.push.pushId)) {
        outcomes[r.index] = duplicate(r.push, deps);
        return false;
      }
      inBatch.add(r.push.pushId);
      const state = claims.states.get(r.push.pushId);
      const dropped = state === undefined ? undefined : droppedBy(r.push, state, deps);
      if (dropped !== undefined) {
        outcomes[r.index] = dropped;
        return false;
      }
      if (state === 'claimed') {
        r.push = subscribedNow(r.push, claims.subscriptions.get(r.push.pushId));
        return true;
      }
      outcomes[r.index] = state === 'done' ? duplicate(r.push, deps) : inFlight(r.push, deps.leaseMs);
      return false;
    });
    const budgetWindow = budgetWindowOf(deps, claimedAt);
    const stopKeeping = keepClaims(deps.ledger, toSend.map((r) => r.push.pushId), deps.owner, deps.leaseMs, deps.logger);
    try {
      const recording = recorder.batch();
      const results = await Promise.all(toSend.map((r) => send(r, deps, budgetWindow.signal).then((result) => record(r, result, recording, deps))));
      await recording.flush();
      await settle(toSend, results, outcomes, deps);
    } finally {
      budgetWindow.close();
      stopKeeping();
    }
    return flushed(outcomes, deps);
  };
}

/** Claims after the first that a batch makes for pushes found moved again (a token replaced while its push was being moved); one still moving after them is tried again later. */
const MOST_MOVES = 2;

/** The batch's claims: each push's state, the subscriptions of claimed web pushes, and the moved pushes parked (moveTo). */
type BatchClaims = { states: Map<string, LiveClaimResult>; subscriptions: Map<string, CurrentSubscription>; parked: Set<Claimable> };

/**
 * claimLive for the batch, then again for the pushes it found moved (their token replaced by a live
 * one since they were made: LiveClaims.moves), each made the push of the device it moved to
 * (moveTo), so the claim asks of that device what it asks of any: whose it is now, whether it is
 * live, and (a push that waited) its job's cancellation and its user's preferences. The pushes
 * not moved cost no more than the one statement.
 */
async function claimFollowingMoves(ready: readonly Claimable[], askedBefore: number, deps: PusherDeps, outcomes: Outcome[]): Promise<BatchClaims> {
  const claims: BatchClaims = { states: new Map(), subscriptions: new Map(), parked: new Set() };
  const movedFrom = new Map<string, { r: Claimable; from: string }>();
  let asking = ready;
  for (let round = 0; asking.length > 0; round++) {
    const claiming = deps.ledger.claimLive(asking.map((r) => toClaim(r.push, askedBefore)), deps.owner, deps.leaseMs, { webSubscriptions: deps.platform === 'web' });
    // A later round's failure (only moved pushes, which hold no claim) must not fail the batch: the
    // first round's claims would be held unsent for a lease. Those pushes are tried again later.
    const found: LiveClaims | undefined = round === 0 ? await claiming : await claiming.catch(() => undefined);
    if (found === undefined) {
      for (const r of asking) claims.states.set(r.push.pushId, 'in-flight');
      break;
    }
    for (const [id, state] of found) claims.states.set(id, state);
    for (const [id, subscription] of found.subscriptions ?? []) claims.subscriptions.set(id, subscription);
    if (round === MOST_MOVES) break;
    const moving = asking.filter((r) => found.get(r.push.pushId) === 'moved');
    asking = moving.filter((r) => {
      const to = found.moves?.get(r.push.pushId);
      if (to !== undefined && !movedFrom.has(r.push.pushId)) movedFrom.set(r.push.pushId, { r, from: r.push.token });
      const refused = to === undefined ? undefined : moveTo(r, to, deps);
      if (refused !== undefined) {
        outcomes[r.index] = refused;
        claims.parked.add(r);
      }
      return to !== undefined && refused === undefined;
    });
  }
  // Counted once claimed for the device it moved to (once a push, whatever its copies in the batch):
  // one found done, another user's or unwanted there is not moved.
  for (const { r, from } of movedFrom.values()) {
    if (claims.states.get(r.push.pushId) !== 'claimed') continue;
    const { push } = r;
    deps.metrics.moved.inc({ platform: push.platform, app: push.app });
    deps.logger.info({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: from, movedTo: push.token }, 'push moved to the token that replaced its own');
  }
  return claims;
}

/**
 * Makes `r` the push of the device its token's replacement is (claimFollowingMoves): its token and
 * device id, and its push service's route (routeOf: a Web Push's new endpoint may be another push
 * service). Returns the park when the app does not take it there.
 */
function moveTo(r: Claimable, to: MovedTo, deps: PusherDeps): Outcome | undefined {
  r.push = { ...r.push, deviceId: to.deviceId, token: to.token };
  const routed = routeOf(r.push, r.app, deps);
  if ('kind' in routed) return routed;
  r.service = routed.service;
  r.lane = routed.lane;
  return undefined;
}

/** PREFERENCES_RECHECK_AFTER_MS's default (pusher-config.ts takes it from here). */
export const DEFAULT_PREFERENCES_RECHECK_MS = 10_000;

/**
 * A push as its claim takes it: asked again whether its job was cancelled and (given its job's
 * category) its user's opt-outs and mutes, if they were last asked before `askedBefore`: when the
 * demuxer made it (askedAt; its job's acceptance for a push without one), or when it fell due (a
 * scheduled push's release asks them).
 */
function toClaim(push: DevicePush, askedBefore: number): LedgerPush {
  const asked = Math.max(Date.parse(push.askedAt ?? push.acceptedAt), push.dueAt === undefined ? 0 : Date.parse(push.dueAt));
  if (asked > askedBefore) return push;
  const about = push.category === undefined ? {} : { category: push.category, ...(push.objectId !== undefined && { objectId: push.objectId }) };
  const recheck = { jobId: push.jobId, app: push.app, ...about };
  return { pushId: push.pushId, deviceId: push.deviceId, token: push.token, userId: push.userId, ...(push.toDevice === true && { toDevice: true }), recheck };
}

/**
 * A web push sent to its subscription as its device holds it now (claimLive): a browser that
 * subscribed again at the same endpoint since the push was queued (the registrar keeps the row and
 * replaces its keys, and the VAPID key it was made with) takes only what is encrypted to its new
 * keys. Encrypted to the old ones, the push service accepted it (201) and the browser dropped it.
 */
function subscribedNow(push: DevicePush, current: CurrentSubscription | undefined): DevicePush {
  if (current === undefined) return push;
  const resubscribed: DevicePush = { ...push, ...current };
  if (current.webVapidKey === undefined) delete resubscribed.webVapidKey;
  return resubscribed;
}

async function flushed(outcomes: Outcome[], deps: PusherDeps): Promise<Outcome[]> {
  await deps.outcomes?.flush();
  return outcomes;
}

async function admit(message: InboundMessage, deps: PusherDeps, at: Date): Promise<Outcome | Omit<Claimable, 'index' | 'attempt' | 'sentBefore'>> {
  const parsed = decodeWith(DevicePush, message.body);
  if (!parsed.ok) return park(deps, undefined, parsed.reason.startsWith('malformed') ? 'malformed-json' : 'schema', parsed.reason);
  const push = parsed.value;
  // The ledger keys a push by its id in lower case: two copies spelt differently are one push, here too.
  push.pushId = push.pushId.toLowerCase();
  if (push.platform !== deps.platform) {
    return park(deps, push, 'wrong-platform', `a ${push.platform} push reached the ${deps.platform} pusher`);
  }
  if (push.expiresAt !== undefined && Date.parse(push.expiresAt) <= at.getTime()) return droppedExpired(push, deps);
  if (deps.cancelled?.has(push.jobId) === true) return droppedCancelled(push, deps);
  const app = await deps.apps.get(push.app);
  if (app === undefined) return park(deps, push, 'unknown-app', `unknown app "${push.app}"`);
  if (!app.enabled) return park(deps, push, 'app-disabled', `app "${push.app}" is disabled`);
  const routed = routeOf(push, app, deps);
  if ('kind' in routed) return routed;
  const { service, lane } = routed;
  if (deps.platform === 'apns' && app.apnsTopic === null) {
    return park(deps, push, 'no-apns-topic', `app "${push.app}" has no APNs topic configured`);
  }
  // Its provider is down: held as it comes, neither claimed nor sent (one held past its bound goes
  // on to its claim, which finds it done if it is, and its send is held, and it is parked, there).
  if (deps.lanes?.down(lane) === true && !heldTooLong(push, deps.lanes, at)) return held(push, lane, deps, at, { sentNow: false });
  return { push, topic: app.apnsTopic ?? undefined, app, service, lane };
}

/**
 * A push's push service, worked out once (a Web Push's endpoint parsed, the allow-list scanned): its
 * pacing lane (`service`) and breaker's lane; or the park of one its app takes no more, banned there
 * (app-ban.ts) or (web) off the app's push-service allow-list as it is now, not only as it was when
 * the browser subscribed: a host an operator took off the list (a test host, a wildcard narrowed)
 * gets no more signed POSTs. Asked at admission, and again of a push moved to another token (moveTo).
 */
function routeOf(push: DevicePush, app: AppRow, deps: PusherDeps): Outcome | { service: string | undefined; lane: string } {
  const service = pacingLaneOf(push, app);
  const ban = deps.bans?.banned(app.id, settingsKeyOf(app), banScopeOf(push, service));
  if (ban !== undefined) return park(deps, push, 'app-banned', bannedReason(app.id, ban));
  const host = push.platform === 'web' ? endpointHostProblem(push.token, app.webPushHosts) : undefined;
  if (host !== undefined) return park(deps, push, 'push-service-not-allowed', host);
  return { service, lane: laneOf(push, service) };
}

/**
 * Where a push's credential failures are counted and banned besides its app (app-ban.ts): a Web
 * Push's push service, its pacing lane (`service`: a wildcard entry of the app's allow-list, else the
 * endpoint's host), as a push service's refusal of the VAPID JWT says nothing of the others'.
 */
const banScopeOf = (push: DevicePush, service: string | undefined): string | undefined => (push.platform === 'web' ? service : undefined);

function bannedReason(app: string, ban: { until: Date; reason: string; service?: string }): string {
  const until = ban.until.toISOString();
  if (ban.service === undefined) return `app "${app}" is banned until ${until} after repeated credential or topic errors (${ban.reason})`;
  return `app "${app}" is banned at push service ${ban.service} until ${until} after it repeatedly refused the app's VAPID JWT; its pushes to other push services go on (${ban.reason})`;
}

/**
 * What the provider's prepare made of the push; undefined when it has none, or when it threw (a bug
 * in building the request): send then makes the checks itself, inside the catch that turns what a
 * send throws into a SendResult, as it did before prepare. Thrown here, it failed the whole batch.
 */
function prepareOrLeave(provider: PushProvider, push: DevicePush, target: SendTarget): ReturnType<NonNullable<PushProvider['prepare']>> | undefined {
  try {
    return provider.prepare?.(push, target);
  } catch {
    return undefined;
  }
}

/**
 * A budget wait longer than this asks whether the push's app was disabled meanwhile (apps.get,
 * cached APP_CACHE_TTL_MS), and has what its request counts from now (a TTL, a sent-at) made again.
 */
const LONG_WAIT_MS = 100;

/**
 * A batch waits for budget for at most half a lease after its claim (or until shutdown); the rest
 * is deferred unsent. Its claims stay alive meanwhile (claim-keeper.ts), but a batch that cannot
 * get budget should free its consumer and its claims, and a frozen process should let go within
 * one lease of its last renewal.
 */
function budgetWindowOf(deps: PusherDeps, claimedAt: number): WaitWindow {
  return waitWindow(claimedAt + deps.leaseMs / 2, deps.signal);
}

async function send(r: Claimable, deps: PusherDeps, budgetWindow: AbortSignal): Promise<Sent> {
  // The app's provider before budget: the first push for an app in a process waits here for the
  // provider's making (client module, credentials, connection), so the budget it then takes is
  // spent at once, not saved up behind it and sent together with the next window's.
  const provider = await deps.providers.get(r.app).catch((err: unknown) => ({ failed: providerNotMade(err, deps, r.app.id) }));
  let bookedMs = 0;
  let slowed = false;
  const booked = (turnInMs: number, cause: 'budget' | 'slowed'): void => {
    bookedMs = turnInMs;
    slowed = cause === 'slowed';
  };
  const { service } = r;
  // Its lane taken down since its admission (or it is past its hold, to be parked): no budget spent on it.
  if (deps.lanes?.down(r.lane) === true) return { kind: 'held' };
  // One whose provider could not be made is not sent, so it takes no budget: it waited in the
  // platform's line and took a token ahead of other apps' pushes, on every attempt (a replica with
  // the wrong HERALD_SECRET_KEY retries, and bans nothing). Its app's pause and the pusher's stop
  // still come first: deferred, no attempt spent.
  if ('failed' in provider) return pausedOrStopping(deps, r.push.app, service, budgetWindow) ?? provider.failed;
  const target = r.topic !== undefined ? { apnsTopic: r.topic } : {};
  // Nor does one Herald refuses without making a request (the provider's documented rules, no APNs
  // topic, credentials this process cannot use: SendResult's notSent): refused here, it takes no
  // token and is no provider request. Its checks are made once: send takes what they made.
  const prepared = prepareOrLeave(provider, r.push, target);
  if (prepared !== undefined && isRefusal(prepared)) return prepared;
  const waitFrom = performance.now();
  const paced = deps.limiter === undefined || (await deps.limiter.acquire(1, budgetWindow, r.push.app, booked, service));
  if (!paced) return unpaced(deps, r.push.app, service, bookedMs, slowed);
  if (budgetWindow.aborted) return unpaced(deps, r.push.app, service);
  // The wait for budget can be long: a job cancelled meanwhile is dropped as at intake, and so is
  // a push that expired meanwhile (sent, FCM's ttl 0s and Web Push's TTL 0 say "now, if online").
  if (deps.cancelled?.has(r.push.jobId) === true) return { kind: 'cancelled' };
  if (r.push.expiresAt !== undefined && Date.parse(r.push.expiresAt) <= nowOf(deps).getTime()) return { kind: 'expired-waiting' };
  // An app disabled during a wait for budget (up to half a lease: an incident's first move) sends
  // no more of what its pushers had taken in; asked again only after a wait that took time. An app
  // that cannot be read (a database away, likely in the same incident) is not sent for: the push is
  // let go unsent and comes back through intake, which asks again (thrown, the batch's claims,
  // sends and counts would be lost with it).
  const waitedLong = performance.now() - waitFrom > LONG_WAIT_MS;
  if (waitedLong) {
    const now = await deps.apps.get(r.push.app).catch(() => 'unread' as const);
    if (now === 'unread') return unpaced(deps, r.push.app, service);
    if (now?.enabled !== true) return { kind: 'app-disabled' };
  }
  const started = process.hrtime.bigint();
  // Only a push's first attempt is judged with its lane while it is up: an outage fails every push,
  // the fresh ones too, where a push failing alone (its payload, its token) fails again on each
  // retry, and its retries, alone in a quiet lane, would take it down.
  const sendIt = (): Promise<SendResult> => {
    r.sentNow = true;
    return provider.send(r.push, target, prepared, waitedLong);
  };
  const result = deps.lanes === undefined ? await sendIt() : await deps.lanes.send(r.lane, sendIt, !r.sentBefore);
  if (result.kind === 'held') return result;
  // Refused on its way, still without a request (a Web Push endpoint whose address is not public,
  // found at connect): no provider request, no answer for the limiter.
  if (isRefusal(result)) return result;
  deps.metrics.providerSeconds.observe({ platform: deps.platform }, Number(process.hrtime.bigint() - started) / 1e9);
  deps.limiter?.observe?.(result, r.push.app, service);
  return result;
}

/** A push not to be sent now whatever else holds it: its app is paused by a provider's Retry-After, or the pusher is stopping (or the batch's wait for budget is over). */
function pausedOrStopping(deps: PusherDeps, app: string, service: string | undefined, budgetWindow: AbortSignal): Unpaced | undefined {
  if ((deps.limiter?.pausedFor?.(app, service) ?? 0) > 0 || budgetWindow.aborted) return unpaced(deps, app, service);
  return undefined;
}

/**
 * Whose overload a provider's answer about this push shows (the limiter's `service`): a Web Push's
 * push service, whose Retry-After or overload holds back only pushes to it (RFC 8030 §8.4); the
 * connection of an app that reaches APNs or FCM through one of its own (an endpoint, a proxy: 0011),
 * so a 503 from it slows that app's pushes, not every app's of the platform in this pusher; else the
 * platform's (undefined).
 */
function pacingLaneOf(push: DevicePush, app: AppRow): string | undefined {
  if (push.platform === 'web') return pushServiceOf(push.token, app.webPushHosts);
  const own = push.platform === 'apns' ? app.apnsConnection : app.fcmConnection;
  return own !== undefined && (own.host !== null || own.port !== null || own.proxy) ? `connection of ${app.id}` : undefined;
}

/** The breaker's lane of a push (provider-lanes.ts): its pacing lane (pacingLaneOf), or the platform's own connection. */
const laneOf = (push: DevicePush, service: string | undefined): string => service ?? `${push.platform} (shared connection)`;

/**
 * The longest a held push waits before it is looked at again (the longest delay queue's): a lane
 * back up has its pushes back within as long as it was down, and within this however long that was.
 */
export const MAX_HOLD_DELAY_MS = LONGEST_DELAY_MS;

/** On a push the pusher sent and then held or retried: it was sent before, whatever its attempt says (a replay's is 1). */
export const SENT_BEFORE_HEADER = 'x-herald-sent-before';

const SENT_BEFORE = { [SENT_BEFORE_HEADER]: 1 } as const;

/** Whether a delivery's push was sent before: a retry (attempt 2 on), or one held or retried after its send (a replay's attempt is 1 again). */
const sentBeforeOf = (message: InboundMessage): boolean => message.attempt > 1 || message.headers[SENT_BEFORE_HEADER] !== undefined;

const heldTooLong = (push: DevicePush, lanes: ProviderLanes, at: Date): boolean => at.getTime() >= pushAsOf(push).getTime() + lanes.settings.holdMs;

/**
 * A push whose lane is down (provider-lanes.ts): held, deferred without spending an attempt, as
 * long as the lane has been down (at least its probe interval, at most 20 minutes; an APNs 5xx
 * answered to this push, at least APNS_SERVER_ERROR_RETRY_MS), until PROVIDER_DOWN_HOLD_MS after it
 * was due; then parked (provider-down), to be replayed once the provider answers. An expiry comes
 * first: a held push past it is dropped as expired when it is back. `sentNow`: it was sent and
 * answered with an outage's answer, so it is marked sent before (its next answers are not its
 * lane's judge: a push failing alone would otherwise keep a lane down).
 */
function held(push: DevicePush, lane: string, deps: PusherDeps, at: Date, { sentNow, notBeforeMs = 0 }: { sentNow: boolean; notBeforeMs?: number | undefined }): Outcome {
  const lanes = deps.lanes as ProviderLanes;
  const downForMs = lanes.downForMs(lane);
  const mark = sentNow ? { headers: SENT_BEFORE } : {};
  const down = `${lane} has answered nothing or server errors since ${new Date(at.getTime() - (downForMs ?? 0)).toISOString()}`;
  if (heldTooLong(push, lanes, at)) {
    return { ...park(deps, push, PROVIDER_DOWN, `${down}; held until PROVIDER_DOWN_HOLD_MS (${lanes.settings.holdMs} ms) after it was due: replay it once the provider answers`), ...mark };
  }
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'held' });
  // Held beside a trial that was answered (the lane up by now): back in a second.
  if (downForMs === undefined) return { kind: 'defer', code: PROVIDER_DOWN, reason: `${lane} was being tried: held, no attempt spent`, delayMs: Math.max(notBeforeMs, 1_000), spread: true, ...mark };
  trace(deps, push, 'held: its provider is down', { lane });
  const delayMs = Math.max(notBeforeMs, Math.min(MAX_HOLD_DELAY_MS, Math.max(lanes.settings.probeMs, downForMs)));
  return { kind: 'defer', code: PROVIDER_DOWN, reason: `${down}: held, no attempt spent`, delayMs, spread: true, ...mark };
}

/** The park and defer code of a push whose provider is down. */
export const PROVIDER_DOWN = 'provider-down';

/**
 * Why the app's provider could not be made. The database that holds its credentials being out of
 * reach (a restart, a failover, a lost connection) passes, so the push is retried; so do sealed
 * credentials this process cannot open (HERALD_SECRET_KEY unset, or not the key that sealed them):
 * a fault of this replica's deployment, not of the app, which another replica with the right key
 * delivers (counted, and alarmed: HeraldCredentialsUnreadable); banned, every app with credentials
 * had its pushes parked. Anything else (no credentials, keys that decrypt but do not load) fails
 * the same way every time: parked, and counted towards a ban of the app (app-ban.ts).
 */
function providerNotMade(err: unknown, deps: PusherDeps, app: string): Extract<SendResult, { kind: 'transient' | 'permanent' }> {
  const reason = `credentials: ${(err as Error).message}`;
  if (isDatabaseUnavailable(err)) return { kind: 'transient', reason };
  if (!unreadableHere(err)) return { kind: 'permanent', reason };
  deps.metrics.credentialsUnreadable.inc({ platform: deps.platform, app });
  return { kind: 'transient', reason };
}

/**
 * An envelope this key does not open, or no key at all: most likely this replica's key (another
 * replica opens it), though an envelope altered or copied from another app reads the same (every
 * replica then counts it, and the alert says both). A stored value that is no envelope at all is
 * the record's own fault, whatever the key: permanent.
 */
const unreadableHere = (err: unknown): boolean =>
  (err instanceof SecretBoxError && err.code === 'unopened') || (err instanceof AppAdminError && err.code === 'no-secret-key');

/**
 * A push the provider accepted goes to the ledger at once, not when the whole batch is done; its
 * job-status outcome goes in the same write (so the status never misses a push the ledger has).
 */
function record(r: Claimable, result: Sent, recorder: RecordedBatch, deps: PusherDeps): Sent {
  if (result.kind !== 'delivered') return result;
  const detail = result.providerMessageId !== undefined ? { providerMessageId: result.providerMessageId } : {};
  recorder.add({ pushId: r.push.pushId, outcome: 'delivered', ...(deps.outcomes !== undefined && { status: outcomeEntry(r.push, 'delivered', detail) }) });
  return result;
}

/**
 * Record cancelled pushes and release the ones to retry (delivered ones are recorded already).
 * Dead-token pushes are recorded once their invalidations are confirmed, and acked after that
 * (their outcomes' `after`): outside the batch, so the rest of it is acked while RabbitMQ holds
 * the invalidations (a memory or disk alarm); one whose invalidation is lost is sent again.
 */
async function settle(sent: Claimable[], results: Sent[], outcomes: Outcome[], deps: PusherDeps): Promise<void> {
  const completed: Array<{ pushId: string; outcome: string }> = [];
  const dead: Array<{ index: number; completion: { pushId: string; outcome: string } }> = [];
  const release: string[] = [];
  const invalidations: Invalidation[] = [];
  const observedAt = nowOf(deps);
  // Once per app of the batch that delivered, before its dead tokens are judged.
  const delivering = new Set(sent.filter((_, i) => results[i]?.kind === 'delivered').map((r) => r.app));
  for (const app of delivering) deps.bans?.delivered(settingsKeyOf(app));
  sent.forEach((r, i) => {
    const result = results[i] as Sent;
    const { push } = r;
    // A token that does not go with an app whose pushes all fail: the app's settings are the suspect.
    if (result.kind === 'dead-token' && result.unlessAppFails === true && deps.bans !== undefined && !deps.bans.deliversLately(settingsKeyOf(r.app))) {
      const kept = keptToken(result);
      deps.bans.kept(push.app, kept);
      release.push(push.pushId);
      outcomes[r.index] = park(deps, push, PROVIDER_REJECTED, kept.reason);
      return;
    }
    if (result.kind === 'unpaced') {
      release.push(push.pushId);
      outcomes[r.index] = deferUnsent(result);
      return;
    }
    // Not sent, or failed by an outage that has taken its lane down (this push's failure among
    // those that did): held, its attempt not spent.
    if (result.kind === 'held' || (result.kind === 'transient' && result.outage === true && deps.lanes?.down(r.lane) === true)) {
      release.push(push.pushId);
      // An APNs 5xx still waits the 15 minutes Apple asks before this payload goes again.
      const sentNow = result.kind === 'transient' && r.sentNow === true;
      const notBeforeMs = sentNow ? retryDelayOf(result, r.attempt, deps.serverErrorRetryMs ?? 0).delayMs : undefined;
      outcomes[r.index] = held(push, r.lane, deps, observedAt, { sentNow, notBeforeMs });
      return;
    }
    // Claimed, so marked done in the ledger: the job-status outcome goes in the same statement, as a
    // delivery's. Noted apart, a pusher killed between the two writes lost it for good (the copy
    // redelivered finds the ledger done and records nothing), and the job read in flight forever.
    if (result.kind === 'cancelled') {
      completed.push({ pushId: push.pushId, outcome: 'cancelled', ...statusOf(deps, push, 'cancelled', CANCELLED) });
      outcomes[r.index] = droppedCancelled(push, deps, false);
      return;
    }
    if (result.kind === 'app-disabled') {
      release.push(push.pushId);
      outcomes[r.index] = park(deps, push, 'app-disabled', `app "${push.app}" was disabled (or removed) while the push waited for budget`);
      return;
    }
    if (result.kind === 'expired-waiting') {
      completed.push({ pushId: push.pushId, outcome: 'expired', ...statusOf(deps, push, 'expired', expiredDetail(push)) });
      outcomes[r.index] = droppedExpired(push, deps, false);
      return;
    }
    const label = { platform: push.platform, app: push.app };
    switch (result.kind) {
      case 'delivered':
        deps.metrics.pushes.inc({ ...label, outcome: 'delivered' });
        // From acceptance, or from when a scheduled push fell due: an on-time 09:00 wave is not hours late.
        deps.metrics.latency.observe({ platform: push.platform }, Math.max(0, observedAt.getTime() - pushAsOf(push).getTime()) / 1000);
        trace(deps, push, 'delivered', { providerMessageId: result.providerMessageId });
        break;
      case 'dead-token':
        dead.push({ index: r.index, completion: { pushId: push.pushId, outcome: `invalid: ${result.reason}` } });
        invalidations.push(invalidationFor(push, result, observedAt));
        deps.metrics.pushes.inc({ ...label, outcome: 'invalid' });
        deps.outcomes?.note(push, 'invalid', { code: result.reason, reason: `the provider answered ${result.reason}: the token is dead` });
        trace(deps, push, 'dead token: invalidation published', { reason: result.reason });
        break;
      case 'transient':
        release.push(push.pushId);
        if (deps.lastAttempt === undefined || r.attempt < deps.lastAttempt) deps.metrics.pushes.inc({ ...label, outcome: 'retried' });
        // Marked sent, for good: a replay of its park (attempt 1 again) is no fresh push for its lane either.
        outcomes[r.index] = { kind: 'retry', code: 'transient', reason: result.reason, ...retryDelayOf(result, r.attempt, deps.serverErrorRetryMs ?? 0), ...(r.sentNow && { headers: SENT_BEFORE }) };
        break;
      case 'permanent':
        deps.bans?.observe(push.app, result, settingsKeyOf(r.app), banScopeOf(push, r.service));
        release.push(push.pushId);
        outcomes[r.index] = park(deps, push, PROVIDER_REJECTED, result.reason);
        break;
    }
  });
  if (dead.length > 0) {
    const ids = dead.map((d) => d.completion.pushId);
    // Their claims are kept (the batch's keeper stops when it returns) until they are recorded or
    // given up: a lapsed one could be claimed again meanwhile, and the release below would delete that claim.
    const stopKeeping = keepClaims(deps.ledger, ids, deps.owner, deps.leaseMs, deps.logger);
    const invalidated = publishInvalidations(invalidations, deps)
      .then(
        () => completeDurably(deps.ledger, dead.map((d) => d.completion), deps.logger, deps.recordingStop, unrecordedOf(deps.metrics, deps.platform)),
        // Not confirmed: the claims are given up, so each push's redelivery sends (and invalidates) again at once.
        async (err: unknown) => {
          await deps.ledger.release(ids, deps.owner).catch(() => undefined);
          throw err;
        },
      )
      .finally(stopKeeping);
    invalidated.catch(() => undefined); // awaited by each dead-token message's ack; a channel gone meanwhile leaves it unawaited
    for (const d of dead) outcomes[d.index] = { kind: 'ack', after: invalidated };
  }
  if (release.length > 0) await deps.ledger.release(release, deps.owner);
  await completeDurably(deps.ledger, completed, deps.logger, deps.recordingStop, unrecordedOf(deps.metrics, deps.platform));
}

/**
 * The least delay a transient answer asks before the push's next attempt (the retry schedule may
 * wait longer; the messaging lib spreads it above that): its Retry-After, or the least delay the
 * provider's documents ask, doubled for each attempt already spent (they ask exponential back-off
 * from it: FCM QUOTA_EXCEEDED 1, 2, 4, 8 minutes …), or, for a server error the provider asks to
 * wait out (APNs 5xx: 15 minutes), `serverErrorRetryMs` before every attempt alike.
 */
function retryDelayOf(result: Extract<SendResult, { kind: 'transient' }>, attempt: number, serverErrorRetryMs: number): { delayMs?: number } {
  const waitOut = result.serverError === true && serverErrorRetryMs > 0 ? serverErrorRetryMs : undefined;
  if (result.retryAfterMs === undefined && result.retryNotBeforeMs === undefined && waitOut === undefined) return {};
  const notBefore = (result.retryNotBeforeMs ?? 0) * 2 ** Math.min(16, Math.max(0, attempt - 1));
  return { delayMs: Math.max(result.retryAfterMs ?? 0, notBefore, waitOut ?? 0) };
}

/**
 * An unsent push comes back without spending an attempt: after its app's pause ends (spread over a
 * fifth of the time left, as every push of the app deferred meanwhile is due then, in every
 * pusher), at its app's turn (spread likewise when a throttle slowed the app), or in a second for budget.
 */
function deferUnsent(result: Unpaced): Outcome {
  if (result.pausedMs > 0) {
    const reason = `the provider asked this app to back off (Retry-After): ${result.pausedMs} ms to go`;
    return { kind: 'defer', code: 'provider-backoff', reason, delayMs: result.pausedMs, spread: true };
  }
  if (result.bookedMs > 0 && result.slowed === true) {
    const reason = `the provider's quota answer slowed this app down in this pusher; its turn comes in ${Math.ceil(result.bookedMs)} ms`;
    // Spread: past the slowdown's end every refused push is given that one instant (no turn is
    // booked past it), and all of them at once drew the next QUOTA_EXCEEDED, an attempt each.
    return { kind: 'defer', code: 'app-slowed-down', reason, delayMs: Math.ceil(result.bookedMs), spread: true };
  }
  if (result.bookedMs > 0) {
    return { kind: 'defer', code: 'app-rate-limited', reason: `the app's own budget is booked ${Math.ceil(result.bookedMs)} ms ahead`, delayMs: Math.ceil(result.bookedMs) };
  }
  if (result.stopping === true) return { kind: 'defer', code: 'stopping', reason: 'the pusher stopped before sending it', delayMs: 1000 };
  return { kind: 'defer', code: 'rate-limited', reason: 'no outbound budget within the wait bound', delayMs: 1000 };
}

function invalidationFor(push: DevicePush, result: Extract<SendResult, { kind: 'dead-token' }>, observedAt: Date): Invalidation {
  return {
    version: 1,
    platform: push.platform,
    app: push.app,
    token: push.token,
    reason: result.reason,
    ...(result.invalidSince !== undefined && { invalidSince: result.invalidSince.toISOString() }),
    observedAt: observedAt.toISOString(),
    pushId: push.pushId,
  };
}

async function publishInvalidations(invalidations: Invalidation[], deps: PusherDeps): Promise<void> {
  if (invalidations.length === 0) return;
  await deps.publisher.publishMany(
    invalidations.map((inv) => ({ exchange: Exchanges.invalidations, routingKey: invalidationQueueFor(inv.platform), body: inv })),
  );
}

const expiredDetail = (push: DevicePush) => ({ reason: `expired at ${push.expiresAt} before it could be sent` });
const CANCELLED = { reason: 'its job was cancelled (DELETE /v1/jobs/:id) before it was sent' };

/** A ledger completion's job-status outcome, when job status is recorded. */
const statusOf = (deps: PusherDeps, push: DevicePush, outcome: 'cancelled' | 'expired', detail: { reason: string }) =>
  deps.outcomes === undefined ? {} : { status: outcomeEntry(push, outcome, detail) };

/** A push past its expiresAt, dropped unsent and recorded as expired (`note`: false when its ledger completion carries it). */
function droppedExpired(push: DevicePush, deps: PusherDeps, note = true): Outcome {
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'expired' });
  trace(deps, push, 'dropped: expired before sending', { expiresAt: push.expiresAt });
  if (note) deps.outcomes?.note(push, 'expired', expiredDetail(push));
  return ack;
}

/** A cancelled job's push, dropped unsent and recorded as cancelled (`note`: false when its ledger completion carries it). */
function droppedCancelled(push: DevicePush, deps: PusherDeps, note = true): Outcome {
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'cancelled' });
  trace(deps, push, 'dropped: its job was cancelled');
  if (note) deps.outcomes?.note(push, 'cancelled', CANCELLED);
  return ack;
}

/** A push its claim refused (its device, its job or its user no longer has it sent): dropped, acked; undefined for any other state. */
function droppedBy(push: DevicePush, state: LiveClaimResult, deps: PusherDeps): Outcome | undefined {
  switch (state) {
    case 'dead':
    case 'gone':
    case 'reassigned':
      return droppedDead(push, state, deps);
    case 'opted-out':
    case 'muted':
      return droppedUnwanted(push, state, deps);
    case 'cancelled':
      return droppedCancelled(push, deps);
    // 'moved': moved again while it was being moved (claimFollowingMoves), tried again later as one in flight.
    case 'claimed':
    case 'done':
    case 'in-flight':
    case 'moved':
      return undefined;
  }
}

/** Not sent: the device died (invalidated or unregistered, or its row deleted), or went to another user, after the push was queued; acked, counted `invalid`. */
function droppedDead(push: DevicePush, why: 'dead' | 'gone' | 'reassigned', deps: PusherDeps): Outcome {
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'invalid' });
  if (why === 'gone') {
    // Debug: an app deleted drops every push of it so.
    deps.outcomes?.note(push, 'invalid', { code: 'device-gone', reason: 'the device was deleted (pruned once dead, or its app deleted) after the push was queued' });
    deps.logger.debug({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: push.token }, 'push dropped: its device was deleted since it was queued');
  } else if (why === 'dead') {
    deps.outcomes?.note(push, 'invalid', { code: 'invalidated', reason: 'the token was invalidated or unregistered after the push was queued' });
    deps.logger.info({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: push.token }, 'push dropped: token invalidated since it was queued');
  } else {
    deps.outcomes?.note(push, 'invalid', { code: 'reassigned', reason: 'the device was registered to another user after the push was queued' });
    deps.logger.info({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: push.token }, 'push dropped: the device belongs to another user since it was queued');
  }
  return ack;
}

/** Not sent: its user opted out of its category, or muted its object, since it was made; acked, counted as such in its job's status. */
function droppedUnwanted(push: DevicePush, why: 'opted-out' | 'muted', deps: PusherDeps): Outcome {
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: why });
  const reason = why === 'opted-out' ? `its user opted out of category "${push.category ?? ''}" after the push was made` : `its user muted "${push.objectId ?? ''}" after the push was made`;
  deps.outcomes?.note(push, why, { code: why, reason });
  deps.logger.info({ pushId: push.pushId, jobId: push.jobId, app: push.app, token: push.token }, `push dropped: ${reason}`);
  return ack;
}

function duplicate(push: DevicePush, deps: PusherDeps): Outcome {
  deps.metrics.pushes.inc({ platform: push.platform, app: push.app, outcome: 'duplicate' });
  trace(deps, push, 'already delivered: acknowledged without sending');
  return ack;
}

/** Another pusher holds the claim: come back when it has finished or its lease ran out. */
function inFlight(push: DevicePush, leaseMs: number): Outcome {
  return { kind: 'defer', code: 'in-flight', reason: `push ${push.pushId} is claimed by another pusher`, delayMs: Math.min(leaseMs, 5_000) };
}

/**
 * Park a push. Counted in herald_pushes_total (`failed` when the provider rejected it for good,
 * else `parked`) once the park is confirmed, by the send queue's onParked (park-outcomes.ts).
 */
function park(deps: PusherDeps, push: DevicePush | undefined, code: string, reason: string): Extract<Outcome, { kind: 'park' }> {
  const fields = { app: push?.app, platform: deps.platform, pushId: push?.pushId, jobId: push?.jobId, code, reason };
  // Once per app and code every few seconds, then how many more: a banned or disabled app parks
  // every push it has. A traced push's park is always said (--trace: every step of that job).
  if (push?.trace === true) deps.logger.warn({ ...fields, trace: true }, 'push parked');
  else logSummary(deps.logger, 'warn', 'push parked').note(`${push?.app ?? ''}\u0000${code}`, fields);
  return { kind: 'park', code, reason };
}

function trace(deps: PusherDeps, push: DevicePush, what: string, extra: Record<string, unknown> = {}): void {
  if (push.trace === true) deps.logger.info({ trace: true, jobId: push.jobId, pushId: push.pushId, ...extra }, `trace: pusher ${what}`);
}
