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
   * Run it at this nice value (through `nice`; a value below this process's raises its priority,
   * which needs root or CAP_SYS_NICE: without, GNU nice warns on stderr and starts it at this
   * process's value, and a warning here says so). Rate tests use it so that their instrument's
   * clock readings show when pushes arrived, not when a busy machine got round to scheduling it.
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
  const settingsFile = join(stateDir, 'sandbox.json');
  await rm(settingsFile, { force: true }); // an earlier run's file would end the wait below at once
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
  // `nice -n` adjusts the nice value it inherits (this process's), so ask for the difference.
  const command = options.niceness === undefined ? node : ['nice', '-n', String(options.niceness - getPriority()), ...node];
  const child = spawn(command[0] as string, command.slice(1), { env, stdio: options.stdio ?? ['ignore', 'ignore', 'inherit'] });
  let spawnError: Error | undefined = undefined;
  child.once('error', (err) => (spawnError = err));
  const exitedEarly = (): string | undefined =>
    spawnError !== undefined ? spawnError.message : child.exitCode !== null || child.signalCode !== null ? `exited (${child.exitCode ?? child.signalCode})` : undefined;
  try {
    for (const deadline = Date.now() + 30_000; !existsSync(settingsFile); await new Promise((r) => setTimeout(r, 100))) {
      const early = exitedEarly();
      if (early !== undefined) throw new Error(`the sandbox process did not start: ${command[0]} ${early} (is the sandbox bundle built? npm run build)`);
      if (Date.now() > deadline) throw new Error('the sandbox process did not start: no sandbox.json within 30 s');
    }
    // Written whole and renamed into place once every server listens (settings-file.ts).
    const settings = JSON.parse(await readFile(settingsFile, 'utf8')) as SandboxSettings;
    const niceness = getPriority(child.pid);
    if (options.niceness !== undefined && niceness !== options.niceness) {
      console.warn(`the sandbox runs at nice ${niceness}, not ${options.niceness} (raising a priority needs root or CAP_SYS_NICE): its receive times may carry this machine's scheduling delays`);
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
        await stopChild(child);
        if (ownDir) await rm(stateDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopChild(child);
    if (ownDir) await rm(stateDir, { recursive: true, force: true });
    throw err;
  }
}

/** SIGTERM, then SIGKILL after 5 s; resolves once it has exited (at once if it already had). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined = undefined;
  await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 5000)))]);
  clearTimeout(timer);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
}
