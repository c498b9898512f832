import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { commandLine, isRunning, listeningPorts, processStartTime } from '../../infra/local/process-info.ts';
import { SANDBOX, SERVICES } from '../../infra/local/service-list.ts';
import type { StartRecord } from '../../infra/local/start-lock.ts';

const ROOT = join(import.meta.dirname, '..', '..');
export const SERVICE_COUNT = SERVICES.length + 1;

export type StartLine = Record<string, unknown> & { msg?: string; level?: number; service?: string };

/** One process, named for good: a pid and its start time (a recycled pid is another process). */
export interface Proc {
  pid: number;
  pidStart: number | undefined;
  name: string;
}

/**
 * A real `npm start` (npm itself, the supervisor it execs, every service), run in its own
 * process group with its output parsed. Every process it ever showed is remembered so that
 * kill() can clean up whatever a failed test left behind, orphans included.
 */
export class NpmStart {
  readonly lines: StartLine[] = [];
  readonly npm: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly seen = new Map<number, Proc>();

  constructor(
    readonly stateDir: string,
    env: Record<string, string>,
  ) {
    this.npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: { ...process.env, ...env, HERALD_STATE_DIR: stateDir, LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, like a terminal's foreground job
    });
    // 'close': exited, and all of its output read.
    this.exited = new Promise((resolve) =>
      this.npm.on('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal })),
    );
    for (const stream of [this.npm.stdout, this.npm.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        try {
          this.lines.push(JSON.parse(line) as StartLine);
        } catch {
          this.lines.push({ msg: line, raw: true });
        }
      });
    }
  }

  get npmPid(): number {
    if (this.npm.pid === undefined) throw new Error('npm did not start');
    return this.npm.pid;
  }

  /** The supervisor's lock record, if there is one. */
  record(): StartRecord | undefined {
    try {
      return JSON.parse(readFileSync(join(this.stateDir, 'start.lock'), 'utf8')) as StartRecord;
    } catch {
      return undefined;
    }
  }

  /** The supervisor and every service, per its lock record (remembered for kill()). */
  processes(): Proc[] {
    const rec = this.record();
    if (rec === undefined) return [];
    const procs: Proc[] = [{ pid: rec.pid, pidStart: rec.pidStart, name: 'supervisor' }];
    for (const s of rec.services) if (s.pid !== undefined) procs.push({ pid: s.pid, pidStart: s.pidStart, name: s.name });
    for (const p of procs) this.seen.set(p.pid, p);
    return procs;
  }

  /** Services that logged that they started (their signal handlers are in place from then on). */
  started(): Set<string> {
    return new Set(
      this.lines
        .filter((l) => (l.msg === `${String(l.service)} started` || l.msg === 'sandbox ready') && typeof l.service === 'string')
        .map((l) => String(l.service)),
    );
  }

  /** Wait until every service has logged that it started and listens on its ports; returns them. */
  async waitRunning(timeoutMs = 60_000): Promise<{ supervisor: Proc; services: Proc[]; ports: Map<string, number[]> }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const procs = this.processes();
      const services = procs.filter((p) => p.name !== 'supervisor');
      const supervisor = procs.find((p) => p.name === 'supervisor');
      if (supervisor !== undefined && services.length === SERVICE_COUNT && this.started().size === SERVICE_COUNT) {
        const listening = listeningPorts(services.map((s) => s.pid));
        if (services.every((s) => (listening.get(s.pid) ?? []).length > 0)) {
          return { supervisor, services, ports: new Map(services.map((s) => [s.name, listening.get(s.pid) ?? []])) };
        }
      }
      if (this.npm.exitCode !== null || this.npm.signalCode !== null) throw new Error(`npm start exited early:\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`npm start did not come up within ${timeoutMs} ms:\n${this.tail()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGKILL everything this run ever showed (its process group and each service's own group), if still there. */
  kill(): void {
    this.processes();
    const pids = [this.npmPid, ...[...this.seen.values()].filter((p) => isRunning(p.pid, p.pidStart)).map((p) => p.pid)];
    for (const pid of pids) {
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // not a group leader, or gone
        }
      }
    }
  }

  tail(n = 40): string {
    return this.lines
      .slice(-n)
      .map((l) => JSON.stringify(l).slice(0, 600))
      .join('\n');
  }
}

/** Those of `procs` still running, waiting up to `timeoutMs` for the list to empty. */
export async function stillRunningAfter(procs: readonly Proc[], timeoutMs: number): Promise<Proc[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = procs.filter((p) => isRunning(p.pid, p.pidStart));
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Live processes whose parent is `parentPid` and whose command line contains `needle`. */
export function childrenOf(parentPid: number, needle: string): Proc[] {
  const out: Proc[] = [];
  for (const dir of readdirSync('/proc')) {
    if (!/^\d+$/.test(dir)) continue;
    const pid = Number(dir);
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== parentPid || fields[0] === 'Z') continue;
    } catch {
      continue;
    }
    if (commandLine(pid)?.includes(needle) === true) out.push({ pid, pidStart: processStartTime(pid), name: needle });
  }
  return out;
}

/** The environment of an isolated `npm start`: its own vhost and schema, and every port picked free (none of a developer's fixed ones). */
export function isolatedEnv(amqpUrl: string, databaseUrl: string, schema: string): Record<string, string> {
  return {
    AMQP_URL: amqpUrl,
    DATABASE_URL: databaseUrl,
    DATABASE_SCHEMA: schema,
    API_PORT: '0',
    HTTP_PORT: '0',
    SANDBOX_APNS_PORT: '0',
    SANDBOX_FCM_PORT: '0',
    SANDBOX_WEB_PORT: '0',
    SANDBOX_CONTROL_PORT: '0',
    LOG_LEVEL: 'info',
    // A service's shutdown is bounded by this + 5 s (libs/runtime): keeps the tests' waits short.
    SHUTDOWN_TIMEOUT_MS: '2000',
  };
}

export const SERVICE_NAMES: readonly string[] = [SANDBOX.name, ...SERVICES.map((s) => s.name)];
