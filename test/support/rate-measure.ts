// Measuring outbound push rates at the sandbox, for the rate-limit tests.
import { apnsToken } from './fixtures.ts';
import { metric } from './metrics.ts';
import type { Pause } from '@herald/sandbox';
import { sandboxPauses, sandboxRecords, type SandboxRecord } from './sandbox-client.ts';
import { DEMO_APP, type System } from './system.ts';

/**
 * The rate tests' sandbox runs as its own process at this nice value (startSystem's
 * sandboxProcess). In the test's own process, on two busy cores, its receive times carried the
 * scheduler's backlog: a second in which it was not run, then a catch-up stamped as a burst the
 * pushers never sent. Under three CPU hogs the per-second counts of one drain spread 469–518 in
 * process against 493–510 in its own at nice −10 (docs/testing.md). Needs root or CAP_SYS_NICE; elsewhere
 * the sandbox runs at the default priority (nice prints why on stderr).
 */
export const INSTRUMENT_NICENESS = -10;

/** Devices straight into the database, in bulk (the Registrar is not what this test is about). */
export async function seedDevices(sys: System, count: number, prefix = 'rl-user'): Promise<string[]> {
  const users = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const eventAt = new Date().toISOString();
  for (let i = 0; i < count; i += 2000) {
    await sys.database.db.devices.applyRegistrations(
      users.slice(i, i + 2000).map((userId) => ({ version: 1, kind: 'register', app: DEMO_APP.id, platform: 'apns', token: apnsToken(), userId, eventAt })),
    );
  }
  return users;
}

/** `count` users of `app` named `<label>-<i>`, each with one APNs device, straight into the database. */
export async function seedAppDevices(sys: System, app: string, label: string, count: number): Promise<Array<{ user: string; token: string }>> {
  const eventAt = new Date().toISOString();
  const devices = Array.from({ length: count }, (_, i) => ({ user: `${label}-${i}`, token: apnsToken() }));
  await sys.database.db.devices.applyRegistrations(devices.map((d) => ({ version: 1, kind: 'register', app, platform: 'apns', token: d.token, userId: d.user, eventAt }) as const));
  return devices;
}

export async function deliveredSoFar(sys: System): Promise<number> {
  const pushers = [...sys.services.values()].filter((s) => s.name.startsWith('apns-pusher') && s.running);
  const counts = await Promise.all(pushers.map((p) => metric(p, 'herald_pushes_total', { outcome: 'delivered' })));
  return counts.reduce((a, b) => a + b, 0);
}

/** Accepted requests received after sequence number `afterSeq`, as receive times in ms. */
export async function receiveTimes(sys: System, afterSeq: number): Promise<{ times: number[]; tokens: string[] }> {
  const records = (await sandboxRecords(sys.sandbox, { platform: 'apns' })).filter((r: SandboxRecord) => r.seq > afterSeq && r.status === 200);
  return { times: records.map((r) => Date.parse(r.receivedAt)).sort((a, b) => a - b), tokens: records.map((r) => r.path) };
}

/**
 * The start of the clock's whole second holding `t`. The limiter's windows divide the clock's
 * seconds (a 100 ms window's index is ⌊ms / 100⌋ on the database's clock, this machine's), so
 * "the budget plus one window's share" bounds the pushes of each such second: its ten windows'
 * grants, and what the window before it spends in its grace (docs/operations.md). A second
 * counted from any other moment spans parts of eleven windows and the grace of a twelfth: it is
 * a sliding second, bounded by one more share (densestSecond).
 */
export const clockSecondOf = (t: number): number => Math.floor(t / 1000) * 1000;

/** Counts per 1-second window starting at `from` (window k: [from + k s, from + (k+1) s)). */
export function perSecond(times: readonly number[], from: number): number[] {
  const counts: number[] = [];
  for (const t of times) {
    const k = Math.floor((t - from) / 1000);
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return Array.from(counts, (c) => c ?? 0);
}

/** A span in which the instrument (the sandbox) was paused, its late timer and the GC behind it merged. */
export interface InstrumentPause {
  fromMs: number;
  toMs: number;
}

/** The sandbox's pauses (`GET /pauses`) that touch [fromMs, toMs], overlapping ones merged. */
export async function instrumentPauses(sys: System, fromMs: number, toMs: number): Promise<InstrumentPause[]> {
  const spans = (await sandboxPauses(sys.sandbox)).map((p: Pause) => ({ fromMs: p.fromMs, toMs: p.fromMs + p.ms })).filter((p) => p.toMs >= fromMs && p.fromMs <= toMs);
  const merged: InstrumentPause[] = [];
  for (const span of spans.sort((a, b) => a.fromMs - b.fromMs)) {
    const last = merged[merged.length - 1];
    if (last !== undefined && span.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, span.toMs);
    else merged.push({ ...span });
  }
  return merged;
}

/**
 * How many receives a span starting at `fromMs` may hold that arrived before it: while the
 * sandbox was paused it stamped nothing, and requests that arrived then are stamped when it got
 * back (in a catch-up allowed as long as the pause). A span that starts inside a pause or its
 * catch-up can so gain what arrived between the pause's start and its own, at most `ratePerSecond`.
 * Zero when the instrument did not pause: the bound stays exact there.
 */
export function pauseAllowance(pauses: readonly InstrumentPause[], fromMs: number, ratePerSecond: number): number {
  let ms = 0;
  for (const p of pauses) if (p.fromMs < fromMs && fromMs <= p.toMs + (p.toMs - p.fromMs)) ms += Math.min(fromMs, p.toMs) - p.fromMs;
  return Math.ceil((ms * ratePerSecond) / 1000);
}

/**
 * The aligned seconds (from `fromSecond` on) holding more than `bound` plus what an instrument
 * pause before each may have moved into it (pauseAllowance at `ratePerSecond`): empty when the
 * bound held. `seconds` as perSecond(times, first) counts them.
 */
export function secondsOverBound(
  seconds: readonly number[],
  first: number,
  pauses: readonly InstrumentPause[],
  ratePerSecond: number,
  bound: number,
  fromSecond = 0,
): Array<{ second: number; count: number; allowance: number }> {
  return seconds
    .map((count, second) => ({ second, count, allowance: pauseAllowance(pauses, first + second * 1000, ratePerSecond) }))
    .filter((s) => s.second >= fromSecond && s.count > bound + s.allowance);
}

/**
 * Receives a second between `first` and `last` (ms), not counting the time the instrument itself
 * was paused: while the sandbox does not run, nothing is answered, whatever the limiter grants.
 */
export function meanRateWhileAnswering(count: number, first: number, last: number, pauses: readonly InstrumentPause[]): number {
  const pausedMs = pauses.reduce((ms, p) => ms + Math.max(0, Math.min(p.toMs, last) - Math.max(p.fromMs, first)), 0);
  return (count - 1) / ((last - first - pausedMs) / 1000);
}

/** Pauses as [from, to] ms after `first`, for the tests' log lines. */
export const pausesFrom = (pauses: readonly InstrumentPause[], first: number): Array<[number, number]> => pauses.map((p) => [p.fromMs - first, p.toMs - first]);

/** A 1-second span of receives: where it starts, how many, and how many of them its start may owe to an instrument pause. */
export interface Second {
  fromMs: number;
  count: number;
  allowance: number;
}

/**
 * The 1-second span (sliding, starting at a receive) that most exceeds what the instrument's
 * pauses can explain (the densest one when there were none).
 */
export function densestSecond(times: readonly number[], pauses: readonly InstrumentPause[] = [], ratePerSecond = 0): Second {
  let best: Second = { count: 0, fromMs: times[0] ?? 0, allowance: 0 };
  for (let lo = 0, hi = 0; lo < times.length; lo++) {
    const from = times[lo] as number;
    while (hi < times.length && (times[hi] as number) - from < 1000) hi++;
    const allowance = pauseAllowance(pauses, from, ratePerSecond);
    if (hi - lo - allowance > best.count - best.allowance) best = { fromMs: from, count: hi - lo, allowance };
  }
  return best;
}

/** The most receives in any 1-second span (sliding). */
export const maxInAnySecond = (times: readonly number[]): number => densestSecond(times).count;

export const lastSeq = async (sys: System): Promise<number> => Math.max(0, ...(await sandboxRecords(sys.sandbox, { platform: 'apns' })).map((r) => r.seq));
