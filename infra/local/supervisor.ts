/**
 * Runs `npm start`'s services as child processes and owns them: each one is restarted when it
 * dies, with an exponential back-off (1 s doubling to 30 s) while it keeps dying; a failure is
 * reported once (service, exit code, its last output lines), not at every restart; the output
 * of a failing service is held back until it has run steadily for 30 s. `stop()` sends each
 * service one SIGTERM (its graceful shutdown) and SIGKILLs what has not exited within the bound.
 * Each service also stops by itself when the supervisor dies: supervised-service.mjs, preloaded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { Logger } from '@herald/logging';
import { serviceNodeArgs } from './build-services.ts';
import { processStartTime } from './process-info.ts';
import type { ServiceRecord } from './start-lock.ts';

export interface BackoffSettings {
  /** Delay before the first restart; doubled at each further exit. */
  firstMs: number;
  /** Longest delay between restarts. */
  capMs: number;
  /** A service that has run this long is healthy again: the next exit is a new failure, reported again. */
  steadyMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { firstMs: 1_000, capMs: 30_000, steadyMs: 30_000 };

export interface SupervisorOptions {
  logger: Logger;
  /** The environment each service gets (per service, for settings only one of them may have). */
  env: (service: string) => NodeJS.ProcessEnv;
  /** How long a service has to exit after SIGTERM before it is killed. */
  stopBoundMs: number;
  backoff?: BackoffSettings;
  /** Called whenever a service starts or exits (the lock file records them). */
  onChange?: () => void;
}

interface Supervised {
  name: string;
  child: ChildProcess | undefined;
  closed: Promise<void>;
  startedAt: number;
  /** Exits since it last ran steadily. */
  exits: number;
  restartTimer: NodeJS.Timeout | undefined;
  restartInMs: number | undefined;
  steadyTimer: NodeJS.Timeout | undefined;
  /** Its last output lines, for the failure report. */
  lastLines: string[];
  /** While it is failing: its output, held back. */
  held: Array<{ err: boolean; line: string }> | undefined;
}

const LAST_LINES = 12;
const MAX_HELD = 2_000;
const preload = pathToFileURL(join(import.meta.dirname, 'supervised-service.mjs')).href;

export class Supervisor {
  private readonly services = new Map<string, Supervised>();
  private stopping = false;
  private readonly backoff: BackoffSettings;

  constructor(private readonly opts: SupervisorOptions) {
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
  }

  /** Start `name` and keep it running until stop(). */
  start(name: string): void {
    if (this.stopping || this.services.has(name)) return;
    const s: Supervised = {
      name,
      child: undefined,
      closed: Promise.resolve(),
      startedAt: 0,
      exits: 0,
      restartTimer: undefined,
      restartInMs: undefined,
      steadyTimer: undefined,
      lastLines: [],
      held: undefined,
    };
    this.services.set(name, s);
    this.spawn(s);
  }

  private spawn(s: Supervised): void {
    if (this.stopping) return;
    const child = spawn(process.execPath, ['--import', preload, ...serviceNodeArgs(s.name)], {
      env: {
        ...this.opts.env(s.name),
        HERALD_SUPERVISOR_PID: String(process.pid),
        HERALD_SUPERVISOR_GRACE_MS: String(this.opts.stopBoundMs),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group: a terminal's Ctrl-C reaches only the supervisor, which then sends each
      // service exactly one SIGTERM (a second signal would make a service exit at once).
      detached: true,
    });
    s.child = child;
    s.startedAt = Date.now();
    s.lastLines = [];
    s.closed = new Promise((resolve) =>
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        this.exited(s, child, code, signal);
        resolve();
      }),
    );
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => this.output(s, false, line));
    createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => this.output(s, true, line));
    s.steadyTimer = setTimeout(() => this.steady(s), this.backoff.steadyMs);
    s.steadyTimer.unref();
    this.opts.onChange?.();
  }

  private output(s: Supervised, err: boolean, line: string): void {
    s.lastLines.push(line);
    if (s.lastLines.length > LAST_LINES) s.lastLines.shift();
    if (s.held !== undefined && s.held.length < MAX_HELD) {
      s.held.push({ err, line });
      return;
    }
    (err ? process.stderr : process.stdout).write(`${line}\n`);
  }

  private exited(s: Supervised, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (s.child !== child) return;
    s.child = undefined;
    clearTimeout(s.steadyTimer);
    if (this.stopping) {
      this.opts.onChange?.();
      return;
    }
    s.exits += 1;
    const delay = Math.min(this.backoff.firstMs * 2 ** (s.exits - 1), this.backoff.capMs);
    s.restartInMs = delay;
    const uptimeMs = Date.now() - s.startedAt;
    if (s.exits === 1) {
      this.opts.logger.error(
        { serviceName: s.name, code, signal, uptimeMs, lastLines: s.lastLines.slice(), restartInMs: delay },
        `${s.name} exited (${signal ?? `code ${code}`}); restarting it in ${delay / 1000} s, backing off to ${this.backoff.capMs / 1000} s while it keeps failing. ` +
          `Further exits are not reported, and its output is held back, until it has run for ${this.backoff.steadyMs / 1000} s`,
      );
      s.held = [];
    } else {
      this.opts.logger.debug(
        { serviceName: s.name, code, signal, uptimeMs, exits: s.exits, restartInMs: delay },
        `${s.name} exited again`,
      );
    }
    s.restartTimer = setTimeout(() => {
      s.restartTimer = undefined;
      s.restartInMs = undefined;
      this.spawn(s);
    }, delay);
    this.opts.onChange?.();
  }

  /** Running for steadyMs: healthy again. */
  private steady(s: Supervised): void {
    const held = s.held ?? [];
    if (s.exits > 0)
      this.opts.logger.info(
        { serviceName: s.name, exits: s.exits, heldLines: held.length },
        `${s.name} is running again (after ${s.exits} exits)`,
      );
    for (const { err, line } of held) (err ? process.stderr : process.stdout).write(`${line}\n`);
    s.held = undefined;
    s.exits = 0;
    this.opts.onChange?.();
  }

  /** Every service: pid, and how it is doing. */
  records(): ServiceRecord[] {
    return [...this.services.values()].map((s) => ({
      name: s.name,
      pid: s.child?.pid,
      pidStart: s.child?.pid === undefined ? undefined : processStartTime(s.child.pid),
      exits: s.exits,
      restartInMs: s.restartInMs,
    }));
  }

  /** Pids of the services running now. */
  pids(): number[] {
    return [...this.services.values()].flatMap((s) => (s.child?.pid === undefined ? [] : [s.child.pid]));
  }

  /**
   * SIGTERM to every service, SIGKILL to those still running after the bound; resolves when
   * every one has exited, with the names of those that had to be killed.
   */
  async stop(): Promise<string[]> {
    this.stopping = true;
    for (const s of this.services.values()) {
      clearTimeout(s.restartTimer);
      clearTimeout(s.steadyTimer);
      if (s.exits > 0)
        this.opts.logger.warn(
          { serviceName: s.name, exits: s.exits, lastLines: s.lastLines.slice(-3) },
          `${s.name} was still failing`,
        );
      s.held = undefined;
      s.child?.kill('SIGTERM');
    }
    const running = [...this.services.values()].filter((s) => s.child !== undefined);
    const all = Promise.all(running.map((s) => s.closed));
    let timer: NodeJS.Timeout | undefined;
    const overran = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.opts.stopBoundMs))),
    ]);
    clearTimeout(timer);
    if (!overran) return [];
    const killed = running.filter((s) => s.child !== undefined).map((s) => s.name);
    this.killAll();
    await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    return killed;
  }

  /** SIGKILL every service (and anything it started: its process group) at once. */
  killAll(): void {
    this.stopping = true;
    for (const s of this.services.values()) {
      clearTimeout(s.restartTimer);
      const pid = s.child?.pid;
      if (pid === undefined) continue;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        s.child?.kill('SIGKILL');
      }
    }
  }
}
