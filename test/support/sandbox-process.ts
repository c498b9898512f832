// The sandbox as a process of its own (its bundle, as `npm start` runs it), for the tests that
// measure time at the sandbox and for the benchmarks that measure its CPU apart from Herald's.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox, SandboxSettings } from '@herald/sandbox';
import { serviceNodeArgs } from '../../infra/local/build-services.ts';
import { preload } from './service-process.ts';

export interface SandboxProcessOptions {
  /** Where sandbox.json goes; a fresh temporary directory (removed on close) by default. */
  stateDir?: string;
  /** SANDBOX_MAX_RECORDS (the sandbox's default when absent). */
  maxRecords?: number;
  /**
   * Run it at this nice value (`nice -n`; negative raises its priority, which needs root or
   * CAP_SYS_NICE, and is otherwise refused with a warning on stderr while the sandbox starts at
   * the default). Rate tests use it so that their instrument's clock readings show when pushes
   * arrived, not when a busy machine got round to scheduling the sandbox.
   */
  niceness?: number;
  /** Node flags before the bundle (a CPU profile, say); HERALD_SERVICE_NODE_ARGS otherwise. */
  nodeFlags?: string;
  stdio?: StdioOptions;
}

export interface SandboxProcess extends Sandbox {
  child: ChildProcess;
  stateDir: string;
  controlUrl: string;
  /** The nice value it actually runs at (read back from the process). */
  niceness: number;
}

export async function startSandboxProcess(options: SandboxProcessOptions = {}): Promise<SandboxProcess> {
  const ownDir = options.stateDir === undefined;
  const stateDir = options.stateDir ?? (await mkdtemp(join(tmpdir(), 'herald-sandbox-process-')));
  const env = {
    ...process.env,
    SANDBOX_STATE_DIR: stateDir,
    SANDBOX_HOST: '127.0.0.1',
    SANDBOX_APNS_PORT: '0',
    SANDBOX_FCM_PORT: '0',
    SANDBOX_WEB_PORT: '0',
    SANDBOX_CONTROL_PORT: '0',
    ...(options.maxRecords === undefined ? {} : { SANDBOX_MAX_RECORDS: String(options.maxRecords) }),
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    // It stops by itself if this process dies without closing it (a killed test run leaves no orphan).
    HERALD_SUPERVISOR_PID: String(process.pid),
  };
  const node = [process.execPath, '--import', preload, ...serviceNodeArgs('sandbox', options.nodeFlags)];
  const command = options.niceness === undefined ? node : ['nice', '-n', String(options.niceness), ...node];
  const child = spawn(command[0] as string, command.slice(1), { env, stdio: options.stdio ?? ['ignore', 'ignore', 'inherit'] });
  const settingsFile = join(stateDir, 'sandbox.json');
  for (const deadline = Date.now() + 30_000; !existsSync(settingsFile); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the sandbox process did not start (no sandbox.json within 30 s)');
  }
  // Written once every server listens (sandbox.ts); read it whole.
  const settings = JSON.parse(await readFile(settingsFile, 'utf8')) as SandboxSettings;
  const niceness = child.pid === undefined ? 0 : getPriority(child.pid);
  if (options.niceness !== undefined && niceness !== options.niceness) {
    console.warn(`the sandbox runs at nice ${niceness}, not ${options.niceness} (no CAP_SYS_NICE?): its receive times may carry this machine's scheduling delays`);
  }
  return {
    child,
    stateDir,
    controlUrl: settings.control.url,
    niceness,
    settings,
    apnsPort: settings.apns.port,
    fcmPort: settings.fcm.port,
    webPort: settings.web.port,
    controlPort: Number(new URL(settings.control.url).port),
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      if (ownDir) await rm(stateDir, { recursive: true, force: true });
    },
  };
}
