import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/**
 * A service logs its shutdown and exits. When whoever read its output is gone (npm start's
 * supervisor SIGKILLed), every write fails with EPIPE, and sonic-boom 4.2.1's exit flush retried
 * such a write forever: the process hung inside process.exit, past every timer meant to end it.
 * patches/sonic-boom+4.2.1.patch makes the flush give up on errors that are not worth retrying
 * (as sonic-boom 5 does).
 */
describe('logging to a pipe nobody reads any more', () => {
  it('does not keep a process from exiting', async () => {
    const code = [
      "import { createLogger } from '@herald/logging';",
      "const logger = createLogger({ service: 'broken-pipe', format: 'json' });",
      // The marker on stderr shows it got as far as process.exit (not an early failure to start).
      "setTimeout(() => { logger.info('shutting down'); logger.info('shutdown complete'); process.stderr.write('calling process.exit\\n'); process.exit(0); }, 300);",
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the service writes its last lines
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const started = Date.now();
    const exited = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 15_000);
      child.once('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!exited) child.kill('SIGKILL');
    expect(exited, `still running ${Date.now() - started} ms after it started (it calls process.exit at 300 ms)`).toBe(true);
    expect(stderr).toContain('calling process.exit');
  }, 30_000);
});
