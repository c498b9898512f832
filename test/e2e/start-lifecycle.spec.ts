// `npm start` owns its processes: a second one refuses and names the first; SIGHUP, SIGTERM and
// Ctrl-C stop every service; a killed supervisor's services stop by themselves; a crash loop
// backs off and is reported once. Each run is a real `npm start` (npm, the supervisor, the
// sandbox and every service) on its own vhost, schema, state directory and free ports, so it
// meets neither a developer's `npm start` nor other tests.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, createTestVhost, type TestDatabase, type TestVhost } from '@herald/testing';
import { isRunning, listeningPorts, portHolder } from '../../infra/local/process-info.ts';
import { childrenOf, isolatedEnv, NpmStart, SERVICE_NAMES, stillRunningAfter, type Proc } from '../support/npm-start.ts';

const runs: NpmStart[] = [];
const dirs: string[] = [];
let vhost: TestVhost;
let database: TestDatabase;

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-start-'));
  dirs.push(dir);
  return dir;
}

function npmStart(dir: string, env: Record<string, string> = {}): NpmStart {
  const run = new NpmStart(dir, { ...isolatedEnv(vhost.amqpUrl, database.url, database.schema), ...env });
  runs.push(run);
  return run;
}

/** No process of `procs` runs any more and none of their ports is held by one of them. */
async function expectAllGone(procs: readonly Proc[], ports: readonly number[], timeoutMs: number): Promise<void> {
  expect((await stillRunningAfter(procs, timeoutMs)).map((p) => `${p.name} (pid ${p.pid})`)).toEqual([]);
  const pids = new Set(procs.map((p) => p.pid));
  for (const port of ports) {
    const holder = portHolder(port);
    expect(holder === undefined || !pids.has(holder.pid), `port ${port} still held by ${holder?.pid}`).toBe(true);
  }
}

/** The services that logged the end of their own graceful shutdown. */
const stoppedGracefully = (run: NpmStart): string[] =>
  [
    ...new Set(
      run.lines.filter((l) => l.msg === 'shutdown complete' || l.msg === 'sandbox stopping').map((l) => String(l.service)),
    ),
  ].sort();

beforeAll(async () => {
  vhost = await createTestVhost('start');
  database = await createTestDatabase('start');
});

afterAll(async () => {
  for (const run of runs) run.kill();
  await vhost.delete();
  await database.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm start, one at a time', () => {
  let first: NpmStart;
  let running: Awaited<ReturnType<NpmStart['waitRunning']>>;

  it('a second npm start in the same state directory exits 1 and names the running one', async () => {
    const dir = stateDir();
    first = npmStart(dir);
    running = await first.waitRunning();

    const second = npmStart(dir);
    const started = Date.now();
    const { code } = await second.exited;
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000); // refused up front, not after a build or a retry loop
    const refusal = second.lines.find((l) => l.level === 50 && l.service === 'herald-start');
    expect(refusal?.msg).toContain('Herald is already running');
    expect(refusal?.msg).toContain(`npm start pid ${running.supervisor.pid}`);
    expect(refusal?.msg).toContain(`api ${(running.ports.get('api') ?? []).join('/')}`);
    expect(second.lines.some((l) => l.msg?.includes('EADDRINUSE') === true)).toBe(false);
    // The first is untouched: every service still the same process, the lock still its own.
    expect(running.services.filter((p) => !isRunning(p.pid, p.pidStart))).toEqual([]);
    expect(first.record()?.pid).toBe(running.supervisor.pid);
  });

  it('SIGHUP to npm (which does not forward it) stops every service, gracefully', async () => {
    process.kill(first.npmPid, 'SIGHUP');
    const ports = [...running.ports.values()].flat();
    await expectAllGone([running.supervisor, ...running.services], ports, 25_000);
    expect(await first.exited).toEqual({ code: null, signal: 'SIGHUP' });
    // Each service ran its own shutdown (one SIGTERM), none had to be killed.
    expect(stoppedGracefully(first)).toEqual([...SERVICE_NAMES].sort());
    expect(first.lines.some((l) => l.msg === 'every service stopped')).toBe(true);
    expect(existsSync(join(first.stateDir, 'start.lock'))).toBe(false);
  });
});

it('a fixed port another process holds stops npm start before it starts anything, naming the holder', async () => {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  try {
    const run = npmStart(stateDir(), { API_PORT: String(port) });
    const { code } = await run.exited;
    expect(code).toBe(1);
    const error = run.lines.find((l) => l.level === 50 && l.service === 'herald-start');
    expect(error?.msg).toContain(`port ${port} (API_PORT, for the HTTP API) is held by pid ${process.pid}`);
    expect(run.lines.some((l) => l.msg === 'services built into dist/services')).toBe(false);
  } finally {
    server.close();
  }
});

it('SIGTERM to npm stops every service and npm exits 0', async () => {
  const run = npmStart(stateDir());
  const { supervisor, services, ports } = await run.waitRunning();
  process.kill(run.npmPid, 'SIGTERM');
  await expectAllGone([supervisor, ...services], [...ports.values()].flat(), 25_000);
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(stoppedGracefully(run)).toEqual([...SERVICE_NAMES].sort());
});

describe('a killed supervisor, then a crash loop', () => {
  const dir = stateDir();

  it('SIGKILL to the supervisor: its services exit by themselves within seconds', async () => {
    const run = npmStart(dir);
    const { supervisor, services, ports } = await run.waitRunning();
    process.kill(supervisor.pid, 'SIGKILL');
    // Noticed within 0.5 s, then each service's own shutdown: SHUTDOWN_TIMEOUT_MS (2 s here) + 5 s at most.
    await expectAllGone(services, [...ports.values()].flat(), 10_000);
    await run.exited;
    expect(existsSync(join(dir, 'start.lock'))).toBe(true); // left behind: the next start finds it stale
  });

  it('a service that keeps failing is restarted with a growing back-off and reported once; Ctrl-C still stops everything', async () => {
    const run = npmStart(dir, { DEMUXER_PREFETCH: 'lots' });
    const { supervisor } = await waitSupervisor(run);
    expect(run.lines.some((l) => l.level === 40 && l.msg?.includes('taking over') === true)).toBe(true);

    // Watch the demuxer processes the supervisor starts, and measure each pause between two of them:
    // from the look that first found the old one gone to the kernel's start time of the next one.
    // The old one had exited by that look, so this never exceeds the real pause, even when this
    // process is slowed (a look taken late under load once made a 1 s pause read 450 ms). A pause
    // counts only when the look before it still found the old one running at most 70 ms earlier, so
    // it reads at most 70 ms (and the clock's 10 ms ticks) short of the supervisor's delay; after a
    // longer gap between looks, when the old one exited is not known well enough to judge the pause.
    const bootMs = bootEpochMs();
    const pauses: { index: number; ms: number }[] = [];
    let current: Proc | undefined = undefined;
    let upAt = 0;
    let down: { at: number; index: number; sure: boolean } | undefined = undefined;
    let exits = 0;
    const deadline = Date.now() + 45_000;
    while (pauses.length < 3 && Date.now() < deadline) {
      const lookedAt = Date.now();
      const demuxer = childrenOf(supervisor.pid, 'services/demuxer/')[0];
      const seenAt = Date.now();
      if (demuxer !== undefined && demuxer.pid !== current?.pid) {
        if (current !== undefined && down === undefined) exits += 1; // gone and back between two looks: not measured
        if (down?.sure === true && demuxer.pidStart !== undefined) pauses.push({ index: down.index, ms: bootMs + demuxer.pidStart * 10 - down.at });
        current = demuxer;
        down = undefined;
      }
      if (demuxer !== undefined) upAt = lookedAt;
      else if (current !== undefined && down === undefined) {
        down = { at: seenAt, index: exits, sure: seenAt - upAt <= 70 };
        exits += 1;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(pauses.length).toBe(3);
    // The n-th pause 1 s × 2^n: 1 s, 2 s, 4 s, … (a fixed delay would give equal pauses).
    for (const p of pauses) expect(p.ms, `pause ${p.index + 1}`).toBeGreaterThanOrEqual(900 * 2 ** p.index);

    // Reported once, with the service's name and its last lines; its later output held back.
    const reports = run.lines.filter((l) => l.service === 'herald-start' && l.level === 50);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.['serviceName']).toBe('demuxer');
    expect(JSON.stringify(reports[0]?.['lastLines'])).toContain('DEMUXER_PREFETCH must be an integer');
    // Counted, not placed after the report: the report goes to stdout and the service's lines to
    // stderr, and two pipes are not read in the order they were written (once, under load, the
    // first run's last stderr line was read after the report). Three pauses mean at least three
    // runs have failed by now, so output that was not held back would show the line three times.
    const lastLines = (reports[0]?.['lastLines'] ?? []) as string[];
    const perRun = lastLines.filter((l) => l.includes('DEMUXER_PREFETCH')).length;
    expect(perRun).toBeGreaterThan(0);
    const shown = run.lines.filter((l) => l !== reports[0] && JSON.stringify(l).includes('DEMUXER_PREFETCH'));
    expect(shown).toHaveLength(perRun);

    // Ctrl-C: the terminal sends SIGINT to npm and the supervisor at once, and npm forwards it.
    const { services, ports } = runningServices(run);
    process.kill(-run.npmPid, 'SIGINT');
    await expectAllGone([supervisor, ...services], [...ports.values()].flat(), 25_000);
    expect((await run.exited).code).toBe(0);
    expect(run.lines.some((l) => l.msg?.startsWith('asked again') === true)).toBe(false);
    expect(stoppedGracefully(run)).toEqual(SERVICE_NAMES.filter((n) => n !== 'demuxer').sort()); // all but the failing one
    expect(childrenOf(supervisor.pid, 'services/demuxer/')).toEqual([]);
  });
});

/** When this machine booted, ms since the epoch: a process's start time (clock ticks of 10 ms since boot) as a time (±10 ms). */
function bootEpochMs(): number {
  const uptimeSeconds = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return Date.now() - uptimeSeconds * 1000;
}

/** The supervisor of a run whose services may not all come up. */
async function waitSupervisor(run: NpmStart): Promise<{ supervisor: Proc }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const supervisor = run.processes().find((p) => p.name === 'supervisor');
    if (supervisor !== undefined && run.lines.some((l) => l.msg?.startsWith('Herald is running') === true)) return { supervisor };
    if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${run.tail()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The services running now (all but the failing ones) and their ports. */
function runningServices(run: NpmStart): { services: Proc[]; ports: Map<string, number[]> } {
  const services = run.processes().filter((p) => p.name !== 'supervisor');
  const listening = listeningPorts(services.map((s) => s.pid));
  return { services, ports: new Map(services.map((s) => [s.name, listening.get(s.pid) ?? []])) };
}

it("npm start's service check needs no root, installs and starts nothing, when RabbitMQ and PostgreSQL answer", () => {
  // A PATH with what the check uses to probe, but no RabbitMQ or PostgreSQL server binaries, a
  // non-root id, and sudo, su and apt-get that only record that they were called.
  const bin = join(stateDir(), 'bin');
  mkdirSync(bin);
  for (const tool of [
    'bash',
    'timeout',
    'curl',
    'psql',
    'pg_isready',
    'seq',
    'sleep',
    'cat',
    'ls',
    'sort',
    'tail',
    'sed',
    'env',
  ]) {
    const found = execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(found, join(bin, tool));
  }
  const calls = join(bin, 'calls');
  for (const tool of ['sudo', 'su', 'apt-get']) {
    writeFileSync(join(bin, tool), `#!${join(bin, 'bash')}\necho "${tool} $*" >> ${calls}\nexit 1\n`);
    chmodSync(join(bin, tool), 0o755);
  }
  writeFileSync(join(bin, 'id'), `#!${join(bin, 'bash')}\necho 1000\n`);
  chmodSync(join(bin, 'id'), 0o755);

  const out = execFileSync(join(bin, 'bash'), [join(import.meta.dirname, '..', '..', 'infra', 'local', 'services.sh')], {
    env: { PATH: bin },
    encoding: 'utf8',
  });
  expect(out).toContain('RabbitMQ and PostgreSQL are up');
  expect(existsSync(calls) ? readFileSync(calls, 'utf8') : '').toBe('');
});
