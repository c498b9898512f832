import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProgram, libEntry, runBundle, type BundledProgram } from '../../../test/support/bundled-program.ts';

// A service reads its configuration at start-up (loadConfigOrExit in each apps/<x>/src/main.ts),
// bundled as it runs, its output read as npm start's supervisor reads it (runBundle).
let program: BundledProgram;

beforeAll(async () => {
  program = await bundledProgram('config-exit', [
    `import { commonConfig, int, loadConfigOrExit } from ${libEntry('config')};`,
    "const config = loadConfigOrExit({ HTTP_HOST: commonConfig.HTTP_HOST, DEMO_PREFETCH: int('Messages in flight', { default: '10', min: 1 }) });",
    "console.log('started with prefetch', config.DEMO_PREFETCH);",
  ]);
});

afterAll(() => program.remove());

describe('a service started with a bad variable', () => {
  it('exits 1 and writes every problem, naming each variable, and nothing else', async () => {
    const result = await runBundle(program.bundle, { HTTP_HOST: 'every-interface', DEMO_PREFETCH: '0' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      [
        'invalid configuration:',
        `  - HTTP_HOST must be an IP address to listen on (127.0.0.1, ::1, 0.0.0.0, :: or one of this machine's addresses) or localhost, got "every-interface"`,
        '  - DEMO_PREFETCH must be at least 1, got 0',
        '',
      ].join('\n'),
    );
  }, 20_000);

  it('starts with good ones', async () => {
    const result = await runBundle(program.bundle, { HTTP_HOST: '127.0.0.1', DEMO_PREFETCH: '20' });
    expect(result).toEqual({ code: 0, stdout: 'started with prefetch 20\n', stderr: '' });
  }, 20_000);
});
