import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProgram, libEntry, runBundle, type BundledProgram } from '../support/bundled-program.ts';

// An error a service throws while its modules load, before runService handles errors, is reported
// by Node: the source line it was thrown from, then the message and stack. The bundles' lines are
// kept short for that report (infra/local/build-services.ts, lineLimit). A ConfigError from
// loadConfig stands in for such an error here; the services themselves read their configuration
// with loadConfigOrExit, which reports the problems alone.
let program: BundledProgram;

beforeAll(async () => {
  program = await bundledProgram('uncaught', [
    `import { commonConfig, loadConfig } from ${libEntry('config')};`,
    `import { connectBroker } from ${libEntry('messaging')};`,
    // Logged, so the bundle carries amqplib and the messaging lib around the throw, as a service's does.
    'console.log(connectBroker.name);',
    "loadConfig({ HTTP_HOST: commonConfig.HTTP_HOST }, { HTTP_HOST: 'every-interface' });",
  ]);
});

afterAll(() => program.remove());

describe('an uncaught error while a bundled service starts', () => {
  it('reaches a slow reader whole: the source line is short, the message and stack follow', async () => {
    const { stderr } = await runBundle(program.bundle);
    expect(stderr).toContain('ConfigError: invalid configuration:');
    expect(stderr).toContain('HTTP_HOST must be an IP address to listen on');
    expect(stderr).toMatch(/at loadConfig \(file:\/\/.*main\.mjs:\d+:\d+\)/);
    expect(Math.max(...stderr.split('\n').map((l) => l.length))).toBeLessThan(2_000);
  }, 20_000);
});
