import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProgram, libEntry, type BundledProgram } from '../../../test/support/bundled-program.ts';

// A service's bundle carries zod with its English locale alone (infra/local/build-services.ts,
// zodEnglishOnly). The reasons a parked message or a 4xx answer gives are zod's messages, so a
// bundled service must still word them in English.
let program: BundledProgram;

beforeAll(async () => {
  program = await bundledProgram('zod-reasons', [
    `import { DevicePush, decodeWith } from ${libEntry('contracts')};`,
    "const parsed = decodeWith(DevicePush, Buffer.from(JSON.stringify({ pushId: 42, platform: 'apns' })));",
    "console.log(parsed.ok ? 'accepted' : parsed.reason);",
  ]);
});

afterAll(() => program.remove());

describe('a contract violation in a bundled service', () => {
  it('is explained in English, naming the field', () => {
    const out = execFileSync(process.execPath, [program.bundle], { encoding: 'utf8', timeout: 20_000 });
    expect(out).toMatch(/^schema violation: .*pushId: Invalid input: expected string, received number/);
  });

  it('comes from a bundle without zod’s other locales', () => {
    // Indonesian's "invalid input", one of the 40-odd locales z.locales re-exports.
    expect(readFileSync(program.bundle, 'utf8')).not.toContain('Input tidak valid');
  });
});
