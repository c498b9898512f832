// A small program bundled as a service's bundle is (infra/local/build-services.ts' BUNDLE_OPTIONS),
// for the specs that check what bundling keeps working.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_OPTIONS } from '../../infra/local/build-services.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface BundledProgram {
  /** The bundle's path. */
  bundle: string;
  /** Deletes the program's directory. */
  remove(): void;
}

/**
 * Bundles `lines` (TypeScript; `libEntry` gives a lib to import) into `outfile`, relative to a
 * fresh directory under dist/, so the bundle finds node_modules as a service's does.
 */
export async function bundledProgram(prefix: string, lines: readonly string[], outfile = 'main.mjs'): Promise<BundledProgram> {
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'dist', `${prefix}-`));
  const entry = join(dir, 'main.ts');
  writeFileSync(entry, [...lines, ''].join('\n'));
  const bundle = join(dir, outfile);
  await build({ ...BUNDLE_OPTIONS, entryPoints: [entry], outfile: bundle });
  return { bundle, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A lib's source entry as a quoted module specifier: `import { x } from ${libEntry('contracts')};`. */
export const libEntry = (lib: string): string => JSON.stringify(join(ROOT, 'libs', lib, 'src', 'index.ts'));

/**
 * Runs a bundle with this process's environment plus `env`, its stdout and stderr read as npm
 * start's supervisor reads them. stderr is read only once the program has exited (or after 5 s),
 * as by a reader that falls behind: what the program wrote beyond the buffer's capacity without
 * waiting is lost, as it would be there.
 */
export function runBundle(bundle: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundle], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString('utf8')));
    child.stderr.pause();
    const late = setTimeout(() => child.stderr.resume(), 5_000);
    child.on('exit', () => {
      clearTimeout(late);
      child.stderr.resume();
    });
    child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ...out }));
  });
}
