import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { serviceNodeArgs } from '../../infra/local/build-services.ts';

/** Env for ServiceProcess that makes each service write a V8 CPU profile into `dir` when it stops (nothing when undefined). */
export const cpuProfileEnv = (dir: string | undefined): Record<string, string> =>
  dir === undefined ? {} : { HERALD_SERVICE_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${dir}` };

/** npm start's preload: a service whose parent is gone stops by itself (a killed test run leaves no orphans holding connections). */
export const preload = pathToFileURL(join(import.meta.dirname, '../../infra/local/supervised-service.mjs')).href;

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

/** One Herald service run as a real process (its esbuild bundle, see infra/local/build-services.ts), its JSON log lines kept for assertions. */
export class ServiceProcess {
  readonly logs: LogLine[] = [];
  private child: ChildProcess | undefined;
  private exitPromise: Promise<{ code: number | null; signal: NodeJS.Signals | null }> = Promise.resolve({ code: 0, signal: null });

  constructor(
    readonly name: string,
    /** Which service's bundle to run (infra/local/service-list.ts). */
    private readonly service: string,
    private readonly env: Record<string, string>,
  ) {}

  /** Start and wait until the service logs that it started. */
  async start(timeoutMs = 30_000): Promise<void> {
    // HERALD_SERVICE_NODE_ARGS (the service's env, else this process's): extra Node flags, e.g.
    // --cpu-prof or --heapsnapshot-signal=SIGUSR2, which NODE_OPTIONS refuses.
    const child = spawn(process.execPath, ['--import', preload, ...serviceNodeArgs(this.service, this.env['HERALD_SERVICE_NODE_ARGS'])], {
      env: { ...process.env, ...this.env, HERALD_SUPERVISOR_PID: String(process.pid), HERALD_SUPERVISOR_GRACE_MS: '10000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const collect = (stream: NodeJS.ReadableStream) =>
      createInterface({ input: stream }).on('line', (line) => {
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          this.logs.push({ msg: line, raw: true });
        }
      });
    collect(child.stdout);
    collect(child.stderr);
    const startedLength = this.logs.length;
    await this.waitForLog((l) => typeof l.msg === 'string' && l.msg.endsWith(' started'), timeoutMs, startedLength);
  }

  async waitForLog(match: (line: LogLine) => boolean, timeoutMs = 15_000, from = 0): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.logs.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.child?.exitCode !== null && this.child?.exitCode !== undefined) {
        throw new Error(`${this.name} exited (${this.child.exitCode}) before the expected log line:\n${this.tail()}`);
      }
      if (Date.now() > deadline) throw new Error(`${this.name}: timed out waiting for a log line:\n${this.tail()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Send a signal and wait for the process to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return this.exitPromise;
    this.child.kill(signal);
    return this.exitPromise;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  tail(n = 30): string {
    return this.logs.slice(-n).map((l) => JSON.stringify(l)).join('\n');
  }
}
