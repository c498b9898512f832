import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOCK_DIR = join(tmpdir(), 'herald-chaos.lock');

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The pid holding the lock, if that process still runs. */
async function holder(): Promise<number | undefined> {
  const pid = Number(await readFile(join(LOCK_DIR, 'pid'), 'utf8').catch(() => 'NaN'));
  return Number.isInteger(pid) && alive(pid) ? pid : undefined;
}

/**
 * One chaos run per machine at a time: each restarts the machine's RabbitMQ and PostgreSQL, so
 * two at once would break each other. mkdir is atomic; a lock whose process is gone is taken over.
 * Returns a release function.
 */
export async function lockMachine(log: (line: string) => void, timeoutMs = 500_000): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    try {
      await mkdir(LOCK_DIR);
      await writeFile(join(LOCK_DIR, 'pid'), String(process.pid));
      return () => rm(LOCK_DIR, { recursive: true, force: true });
    } catch {
      const pid = await holder();
      if (pid === undefined) {
        await new Promise((r) => setTimeout(r, 500 + Math.random() * 500));
        if ((await holder()) === undefined) await rm(LOCK_DIR, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another chaos run (pid ${pid}) held ${LOCK_DIR} for ${timeoutMs} ms`);
      if (!told) log(`waiting for another chaos run on this machine (pid ${pid}) to finish`);
      told = true;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}
