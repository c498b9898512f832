// Measuring outbound push rates at the sandbox, for the rate-limit tests.
import { apnsToken } from './fixtures.ts';
import { metric } from './metrics.ts';
import { sandboxRecords, type SandboxRecord } from './sandbox-client.ts';
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

/** Counts per 1-second window starting at `from` (window k: [from + k s, from + (k+1) s)). */
export function perSecond(times: readonly number[], from: number): number[] {
  const counts: number[] = [];
  for (const t of times) {
    const k = Math.floor((t - from) / 1000);
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return Array.from(counts, (c) => c ?? 0);
}

/** The most receives in any 1-second span (sliding). */
export function maxInAnySecond(times: readonly number[]): number {
  let max = 0;
  for (let lo = 0, hi = 0; hi < times.length; hi++) {
    while ((times[hi] as number) - (times[lo] as number) >= 1000) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

export const lastSeq = async (sys: System): Promise<number> => Math.max(0, ...(await sandboxRecords(sys.sandbox, { platform: 'apns' })).map((r) => r.seq));
