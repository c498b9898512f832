import { execFileSync } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProgram, libEntry, type BundledProgram } from '../../../test/support/bundled-program.ts';

// A service's bundle carries pino (infra/local/build-services.ts). Pretty output (LOG_FORMAT=pretty,
// or a terminal) runs pino-pretty in pino's worker thread, which pino starts from its own files:
// bundled, it could not find them and the service died at start.
let program: BundledProgram;

beforeAll(async () => {
  program = await bundledProgram(
    'pretty-log',
    [
      `import { createLogger } from ${libEntry('logging')};`,
      "createLogger({ service: 'pretty-demo', format: 'pretty' }).info({ queue: 'apns.send' }, 'consuming');",
    ],
    'services/pretty-demo/main.mjs',
  );
});

afterAll(() => program.remove());

describe('pretty logs from a bundled service', () => {
  it('are written by pino-pretty, and the process exits cleanly', () => {
    const out = stripVTControlCharacters(execFileSync(process.execPath, [program.bundle], { encoding: 'utf8', timeout: 20_000 }));
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(\d+\): consuming$/m);
    expect(out).toContain('service: "pretty-demo"');
    expect(out).toContain('queue: "apns.send"');
    expect(out).not.toContain('{"level"');
  });
});
