import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_OPTIONS } from '../../../../infra/local/build-services.ts';
import { bundleMapsUnder, mapBundleLocations } from './stack-map.ts';

// A service bundled as build-services.ts bundles them (its esbuild options: minified, linked
// source map), run on plain Node without source-map support as the services run, so its stack
// names bundle lines.
const SOURCE = [
  "import { fail } from './fail.ts';",
  '',
  'try {',
  '  fail();',
  '} catch (err) {',
  '  process.stdout.write(JSON.stringify({ level: 50, err: { stack: (err as Error).stack } }));',
  '}',
  '',
].join('\n');
const FAIL = ['export function fail(): never {', "  throw new Error('boom');", '}', ''].join('\n');

let root: string;
let logged: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'herald-stack-'));
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'src', 'main.ts'), SOURCE);
  writeFileSync(join(root, 'src', 'fail.ts'), FAIL);
  const outfile = join(root, 'dist', 'services', 'demo-pusher', 'main.mjs');
  await build({ ...BUNDLE_OPTIONS, entryPoints: [join(root, 'src', 'main.ts')], outfile });
  logged = execFileSync(process.execPath, [outfile], { encoding: 'utf8' });
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('herald stack: a logged stack mapped to the TypeScript sources', () => {
  it('maps each bundle location of a JSON log line to its source file, line and column', () => {
    expect(logged).toMatch(/dist\/services\/demo-pusher\/main\.mjs:\d+:\d+/);
    const mapped = mapBundleLocations(logged, bundleMapsUnder(root));
    const stack = (JSON.parse(mapped) as { err: { stack: string } }).err.stack;
    // The throw (fail.ts line 2, column 9: `new Error`), then its caller (main.ts line 4).
    expect(stack).toContain(`at fail (${join(root, 'src', 'fail.ts')}:2:9)`);
    expect(stack).toContain(`${join(root, 'src', 'main.ts')}:4:3`);
    expect(stack).not.toMatch(/main\.mjs:\d+/);
  });

  it("uses the map of the same service under its own root when the logged path is another machine's", () => {
    const elsewhere = logged.replaceAll(root, '/app');
    expect(elsewhere).toContain('/app/dist/services/demo-pusher/main.mjs:');
    const stack = (JSON.parse(mapBundleLocations(elsewhere, bundleMapsUnder(root))) as { err: { stack: string } }).err.stack;
    expect(stack).toContain(`at fail (${join(root, 'src', 'fail.ts')}:2:9)`);
  });

  it('leaves a location without a map as it was, and names its service', () => {
    const line = '    at send (file:///app/dist/services/web-pusher/main.mjs:120:7)';
    const unmapped = new Set<string>();
    expect(mapBundleLocations(line, bundleMapsUnder(root), unmapped)).toBe(line);
    expect([...unmapped]).toEqual(['web-pusher']);
  });

  it('leaves a location the map has nothing for (a line esbuild added) as it was', () => {
    const line = `    at x (${join(root, 'dist', 'services', 'demo-pusher', 'main.mjs')}:1:1)`;
    expect(mapBundleLocations(line, bundleMapsUnder(root))).toBe(line);
  });
});
