import { execFile } from 'node:child_process';

export interface CliRun {
  /** The exit code (-1 when the process could not run or was killed by a signal). */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `herald …` as a person runs it, with `env` over this process's environment (a system's
 * settings); resolves with its exit code and output, never rejects. Asynchronous on purpose: a
 * CLI run takes seconds on a loaded machine, and blocking the test's event loop that long lets
 * servers close the keep-alive connections the test's fetch holds without it noticing (the next
 * request on one then fails with ECONNRESET).
 */
export function herald(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'apps/cli/src/main.ts', ...args],
      { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
  });
}
