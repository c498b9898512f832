import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_OPTIONS } from '../../../infra/local/build-services.ts';

// A service's bundle carries pino (infra/local/build-services.ts). Pretty output (LOG_FORMAT=pretty,
// or a terminal) runs pino-pretty in pino's worker thread, which pino starts from its own files:
// bundled, it could not find them and the service died at start.
const ROOT = join(import.meta.dirname, '..', '..', '..');
let dir: string;
let bundle: string;

beforeAll(async () => {
  // Under the repository, so the bundle finds node_modules (pino-pretty and the workers) as a service's does.
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  dir = mkdtempSync(join(ROOT, 'dist', 'pretty-log-'));
  const entry = join(dir, 'main.ts');
  writeFileSync(
    entry,
    [
      `import { createLogger } from ${JSON.stringify(join(ROOT, 'libs', 'logging', 'src', 'index.ts'))};`,
      "createLogger({ service: 'pretty-demo', format: 'pretty' }).info({ queue: 'apns.send' }, 'consuming');",
      '',
    ].join('\n'),
  );
  bundle = join(dir, 'services', 'pretty-demo', 'main.mjs');
  await build({ ...BUNDLE_OPTIONS, entryPoints: [entry], outfile: bundle });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pretty logs from a bundled service', () => {
  it('are written by pino-pretty, and the process exits cleanly', () => {
    const out = stripVTControlCharacters(execFileSync(process.execPath, [bundle], { encoding: 'utf8', timeout: 20_000 }));
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(\d+\): consuming$/m);
    expect(out).toContain('service: "pretty-demo"');
    expect(out).toContain('queue: "apns.send"');
    expect(out).not.toContain('{"level"');
  });
});
