import type { Platform } from '@herald/contracts';
import { pushKey, type ChaosDevice, type ChaosJob } from './chaos-plan.ts';

/**
 * What must become of one device push the jobs implied:
 * - deliver: a device the sandbox accepts → a 200 in the sandbox. The only fault injected on its
 *   requests is a 503 once to 0.1% of them, which the retry schedule outlasts (all three attempts
 *   would have to draw one), and the SIGKILLs and restarts cost a few redeliveries, far below the
 *   queues' delivery limit (50). So a parked copy of it, or its job parked, is no fate of the plan:
 *   it is accounted for (not lost) but listed in parkedInsteadOfDelivered, and fails the run;
 * - park: a device the sandbox always answers 503 for → parked after the retry schedule;
 * - expire: a job that expires before the demuxer takes it → dropped as expired, never sent.
 * Pushes to dead devices (410) are not expected at all: the first one tells Herald the token is dead.
 */
export type Fate = 'deliver' | 'park' | 'expire';

export interface ExpectedPush {
  key: string;
  jobId: string;
  token: string;
  platform: Platform;
  fate: Fate;
}

/** One 200 the sandbox gave; `answerLost`: the client had gone before the answer was sent. */
export interface Delivery {
  at: number;
  answerLost: boolean;
}

export interface Observations {
  /** Every 200 answer, per push key. */
  deliveries: ReadonlyMap<string, readonly Delivery[]>;
  /** Parked copies in push.<platform>.send.parked, per push key. */
  parked: ReadonlyMap<string, number>;
  /** Ids of jobs in push.jobs.parked (all their pushes count as parked). */
  parkedJobs: ReadonlySet<string>;
  /** When each pusher was SIGKILLed, and when its replacement was spawned. */
  pusherKills: ReadonlyArray<{ platform: Platform; at: number; respawnedAt: number }>;
  /** When a pusher scheduled a push for retry (it had no provider answer it could use), per push key. */
  retries: ReadonlyMap<string, readonly number[]>;
  leaseMs: number;
}

/** Why a push was sent more than once: the two documented windows (README, "The duplicate window"). */
export type DuplicateCause = 'pusher-killed' | 'answer-lost';

export interface Duplicate {
  key: string;
  times: readonly number[];
  /** undefined: outside every documented window. */
  cause: DuplicateCause | undefined;
}

export interface Reconciliation {
  expected: number;
  delivered: number;
  parked: number;
  expired: number;
  /** Expected pushes with no 200, no parked copy and no reason to expire: lost. */
  lost: string[];
  /** 200s that should not exist: to a dead token, for an expired job, for a 503 token, or for no job of the plan. */
  unexpected: string[];
  /** Keys of deliveries meant to happen that were parked instead (their own copy, or their job): accounted for, not lost, but none may be. */
  parkedInsteadOfDelivered: string[];
  duplicates: Duplicate[];
}

/** Every device push the jobs imply, by the fate the plan gave its device and job. */
export function expectedPushes(jobs: readonly ChaosJob[], devices: readonly ChaosDevice[]): ExpectedPush[] {
  const byUser = new Map<string, ChaosDevice[]>();
  for (const d of devices) byUser.set(d.userId, [...(byUser.get(d.userId) ?? []), d]);
  const out: ExpectedPush[] = [];
  for (const job of jobs) {
    for (const d of job.userIds.flatMap((u) => byUser.get(u) ?? [])) {
      if (d.kind === 'dead') continue;
      const fate: Fate = job.expiresInMs !== undefined ? 'expire' : d.kind === 'flaky' ? 'park' : 'deliver';
      out.push({ key: pushKey(job.id, d.token), jobId: job.id, token: d.token, platform: d.platform, fate });
    }
  }
  return out;
}

/**
 * The documented duplicate windows. (1) A pusher SIGKILLed after the provider accepted a push and
 * before the ledger recorded it re-sends that push once its claim's lease runs out: the previous
 * send must come from the killed process — at most one lease before the kill, and before its
 * replacement was spawned (the provider may answer, and record, a request the killed process had
 * sent a few ms after the kill) — and the repeat after the kill. (2) The provider accepted a request whose answer never
 * reached the pusher (a reset connection, a timeout): the sandbox recorded a 200, yet the pusher
 * scheduled the push for retry after it (or the sandbox saw the client gone before answering).
 * Every repeat of a push needs its own explanation.
 */
export function duplicateCause(
  sends: readonly Delivery[],
  platform: Platform,
  retries: readonly number[],
  obs: Pick<Observations, 'pusherKills' | 'leaseMs'>,
): DuplicateCause | undefined {
  const kills = obs.pusherKills.filter((k) => k.platform === platform);
  let cause: DuplicateCause = 'answer-lost';
  for (let i = 1; i < sends.length; i++) {
    const previous = sends[i - 1] as Delivery;
    const repeat = (sends[i] as Delivery).at;
    const lost = previous.answerLost || retries.some((t) => previous.at <= t && t <= repeat);
    if (kills.some((k) => previous.at <= k.respawnedAt && k.at - previous.at <= obs.leaseMs && repeat > k.at)) cause = 'pusher-killed';
    else if (!lost) return undefined;
  }
  return cause;
}

function account(e: ExpectedPush, obs: Observations, r: Reconciliation): void {
  const sent = (obs.deliveries.get(e.key) ?? []).length > 0;
  const parked = (obs.parked.get(e.key) ?? 0) > 0 || obs.parkedJobs.has(e.jobId);
  if (e.fate === 'expire') {
    if (sent) r.unexpected.push(`${e.key} (its job had expired)`);
    else r.expired++;
  } else if (e.fate === 'park') {
    if (sent) r.unexpected.push(`${e.key} (the sandbox fails every request for this token)`);
    else if (parked) r.parked++;
    else r.lost.push(e.key);
  } else if (sent) r.delivered++;
  else if (parked) {
    r.parked++;
    r.parkedInsteadOfDelivered.push(e.key);
  } else r.lost.push(e.key);
}

export function reconcile(expected: readonly ExpectedPush[], obs: Observations): Reconciliation {
  const r: Reconciliation = { expected: expected.length, delivered: 0, parked: 0, expired: 0, lost: [], unexpected: [], parkedInsteadOfDelivered: [], duplicates: [] };
  const byKey = new Map(expected.map((e) => [e.key, e]));
  for (const e of expected) account(e, obs, r);
  for (const [key, sends] of obs.deliveries) {
    const e = byKey.get(key);
    if (e === undefined) r.unexpected.push(`${key} (no job of the plan implies it, or its token is dead)`);
    if (sends.length < 2) continue;
    const sorted = [...sends].sort((x, y) => x.at - y.at);
    r.duplicates.push({ key, times: sorted.map((d) => d.at), cause: e === undefined ? undefined : duplicateCause(sorted, e.platform, obs.retries.get(key) ?? [], obs) });
  }
  return r;
}
