/** One chaos run, shared by the single-broker and the cluster suites: faults, stream, drain, reconcile. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Platform } from '@herald/contracts';
import { expect } from 'vitest';
import { injectFault } from '../support/sandbox-client.ts';
import type { System } from '../support/system.ts';
import { churnDevice, pushKey, type ChaosDevice, type ChaosPlan } from './chaos-plan.ts';
import { CounterTotals } from './counters.ts';
import { exitedOnTheirOwn, runFaults, type FaultEvent } from './fault-injector.ts';
import { runChurn, runJobStream } from './job-stream.ts';
import { deviceFacts, drain, readParked, retriesByKey } from './observe.ts';
import { expectedPushes, reconcile, type Delivery } from './reconcile.ts';
import { RecordCollector, type Observed } from './record-collector.ts';
import { deliveriesResumeMs, recoveryMs } from './recovery.ts';
import { printPostMortem } from './post-mortem.ts';
import { formatSummary } from './summary.ts';

export interface ChaosRunOptions {
  leaseMs: number;
  long: boolean;
  log(line: string): void;
  /** How long the short form waits for the work to drain (default 90 s). */
  drainMs?: number;
}

/**
 * Dead tokens answer 410 Unregistered / UNREGISTERED; flaky tokens always 503 ServiceUnavailable /
 * UNAVAILABLE (transient: retried, then parked); and 0.1% of all other requests 503 once
 * (retried). A 503 also halves the pusher's rate (AIMD, recovering by 0.1 a second), so 503s are
 * kept rare enough for the stream to keep flowing. (Not 500 for APNs: after a 500 node-apn
 * destroys its HTTP/2 session, and every push in flight on it loses its answer and is retried.)
 */
export async function sandboxFaults(sys: System, devices: readonly ChaosDevice[]): Promise<void> {
  const errors = {
    dead: { apns: 'Unregistered', fcm: 'UNREGISTERED', web: 'Gone' },
    flaky: { apns: 'ServiceUnavailable', fcm: 'UNAVAILABLE', web: 'InternalServerError' },
  } as const;
  for (const d of devices) {
    if (d.kind !== 'ok') await injectFault(sys.sandbox, { platform: d.platform, token: d.token, error: errors[d.kind][d.platform] });
  }
  await injectFault(sys.sandbox, { platform: 'apns', fraction: 0.001, error: 'ServiceUnavailable' });
  await injectFault(sys.sandbox, { platform: 'fcm', fraction: 0.001, error: 'UNAVAILABLE' });
}

function deliveriesByKey(records: readonly Observed[]): Map<string, Delivery[]> {
  const out = new Map<string, Delivery[]>();
  for (const r of records) {
    if (r.status !== 200) continue;
    const key = pushKey(r.jobId ?? '?', r.token);
    out.set(key, [...(out.get(key) ?? []), { at: r.at, answerLost: r.clientClosed }]);
  }
  return out;
}

/** With CHAOS_LOG_DIR set, every service's log lines are written there (one file per service) for a post-mortem. */
export async function keepLogs(sys: System, log: (line: string) => void): Promise<void> {
  const dir = process.env['CHAOS_LOG_DIR'];
  if (dir === undefined) return;
  await mkdir(dir, { recursive: true });
  for (const s of sys.services.values()) await writeFile(join(dir, `${s.name}.log`), s.logs.map((l) => JSON.stringify(l)).join('\n'));
  log(`service logs written to ${dir}`);
}

const pusherKills = (faults: readonly FaultEvent[]) =>
  faults
    .filter((f) => f.kind.endsWith('-pusher'))
    .map((f) => ({ platform: (f.kind.includes('apns') ? 'apns' : 'fcm') as Platform, at: f.startedAt, respawnedAt: f.respawnedAt ?? f.startedAt }));

/** The stream, the churn of registrations and the faults at once; then wait until all work is done. */
export async function runChaos(sys: System, plan: ChaosPlan, opts: ChaosRunOptions) {
  const { leaseMs, log, long } = opts;
  const collector = new RecordCollector(sys.sandbox);
  const counters = new CounterTotals(sys);
  collector.start();
  counters.start();
  const startAt = Date.now() + 500;
  let flowing = true;
  const churning = runChurn(sys, plan, () => !flowing, (k) => churnDevice(plan.seed, k));
  const [published, faults] = await Promise.all([
    runJobStream(sys, plan, startAt),
    runFaults(sys, plan.faults, startAt, { beforeKill: (names) => counters.read(names), log }),
  ]).finally(() => (flowing = false));
  const churn = await churning;
  log(`stream and faults done after ${((Date.now() - startAt) / 1000).toFixed(1)} s; draining`);
  const drained = await drain(sys, leaseMs + 2_000, long ? 1_200_000 : opts.drainMs ?? 90_000);
  await counters.read();
  counters.stop();
  await collector.stop();
  return { collector, counters, published, faults, churn, drained };
}

/** Every expected push against what the sandbox, the parked queues, the logs and the database say. */
export async function reconcileRun(sys: System, plan: ChaosPlan, run: Awaited<ReturnType<typeof runChaos>>, leaseMs: number) {
  const parked = await readParked(sys);
  const expected = expectedPushes(plan.jobs, plan.devices);
  const result = reconcile(expected, {
    deliveries: deliveriesByKey(run.collector.records),
    parked: parked.pushes,
    parkedJobs: parked.jobs,
    pusherKills: pusherKills(run.faults),
    retries: await retriesByKey(sys, expected),
    leaseMs,
  });
  const dead = plan.devices.filter((d) => d.kind === 'dead');
  const facts = await deviceFacts(sys, dead, run.churn.map((c) => c.token));
  const delivered = run.collector.records.filter((r) => r.status === 200);
  const inputs = { delivered, jobs: run.published, registeredAt: facts.registeredAt, invalidatedAt: facts.invalidatedAt };
  const recovery = run.faults.map((f) => ({ kind: f.kind, resumeMs: deliveriesResumeMs(f, delivered), flowMs: recoveryMs(f, inputs) }));
  return { result, facts, parked, recovery };
}


/** Runs the plan, prints the summary and asserts the outcome every chaos suite holds to. */
export async function runAndCheck(sys: System, plan: ChaosPlan, opts: ChaosRunOptions): Promise<void> {
  const began = Date.now();
  const run = await runChaos(sys, plan, opts);
  const { result, facts, parked, recovery } = await reconcileRun(sys, plan, run, opts.leaseMs);
  const deadTokens = plan.devices.filter((d) => d.kind === 'dead').length;
  const counters = run.counters.totals();
  console.log(formatSummary({ plan, result, faults: run.faults, recovery, parkedByCode: parked.byCode, counters, deadTokens, durationMs: Date.now() - began, drained: run.drained }));
  if (!run.drained || result.lost.length > 0) {
    const lost = new Set(result.lost);
    await printPostMortem(sys, expectedPushes(plan.jobs, plan.devices).filter((e) => lost.has(e.key)));
  }

  expect(exitedOnTheirOwn(sys)).toEqual([]);
  expect(result.lost.slice(0, 20), `${result.lost.length} pushes lost`).toEqual([]);
  // The plan parks only the flaky devices' pushes (always 503): a push to a healthy device parked, or a
  // job of the plan parked whole, is work Herald gave up on that it should have delivered (reconcile.ts).
  expect(result.parkedInsteadOfDelivered.slice(0, 20), `${result.parkedInsteadOfDelivered.length} healthy pushes parked instead of delivered`).toEqual([]);
  expect([...parked.jobs].slice(0, 20), `${parked.jobs.size} jobs parked`).toEqual([]);
  expect(result.unexpected.slice(0, 20)).toEqual([]);
  expect(result.duplicates.filter((d) => d.cause === undefined).map((d) => `${d.key} at ${d.times.map((t) => new Date(t).toISOString()).join(', ')}`)).toEqual([]);
  expect(facts.notInvalidated, 'dead tokens never marked dead').toEqual([]);
  expect(facts.churnMissing, 'registrations lost').toEqual([]);
  expect(run.drained).toBe(true);
}
