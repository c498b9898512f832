import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '@herald/testing';
import { bundledProgram, libEntry, runBundle, type BundledProgram } from '../support/bundled-program.ts';

// A logged error's `type` is its class's name (pino's error serializer). Services run bundled
// (infra/local/build-services.ts), and a bundler may rename a class: minifying names would make
// every type a letter, and a clash at the bundle's top level makes `DatabaseError` `DatabaseError2`.
const SERVICES = join(import.meta.dirname, '..', '..', 'dist', 'services');

/**
 * The names of the error classes a bundle declares (those extending a class whose name ends in
 * "Error", or named so themselves), as their `name` reads: a class expression's own name, else the
 * variable's it is assigned to.
 */
function errorClasses(bundle: string): string[] {
  const text = readFileSync(bundle, 'utf8');
  const declared = /(?:\bclass\s+([A-Za-z_$][\w$]*)|\b([A-Za-z_$][\w$]*)\s*=\s*class(?:\s+([A-Za-z_$][\w$]*))?)\s+extends\s+([A-Za-z_$][\w$.]*)/g;
  return [...text.matchAll(declared)]
    .map((m) => ({ name: m[1] ?? m[3] ?? m[2] ?? '', base: m[4] ?? '' }))
    .filter(({ name, base }) => /Error$/.test(base) || /Error\d*$/.test(name))
    .map(({ name }) => name);
}

let program: BundledProgram;

beforeAll(async () => {
  program = await bundledProgram('error-names', [
    "import pg from 'pg';",
    `import { createLogger } from ${libEntry('logging')};`,
    "const log = createLogger({ service: 'error-names', format: 'json' });",
    "const client = new pg.Client({ connectionString: process.env['DATABASE_URL'] });",
    'await client.connect();',
    "try { await client.query('select 1 / 0'); } catch (err) { log.error({ err }, 'query failed'); }",
    'await client.end();',
  ]);
});

afterAll(() => program.remove());

describe('error types in a bundled service’s logs', () => {
  it('name a PostgreSQL error DatabaseError, as pg calls it', async () => {
    const { stdout } = await runBundle(program.bundle, { DATABASE_URL: TEST_DATABASE_URL });
    const line = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { msg: string; err: { type: string; code: string } };
    expect(line.msg).toBe('query failed');
    expect(line.err).toMatchObject({ type: 'DatabaseError', code: '22012' });
  }, 30_000);

  it('keep every error class’s own name in the services’ bundles', () => {
    const bundles = readdirSync(SERVICES).map((name) => ({ name, classes: errorClasses(join(SERVICES, name, 'main.mjs')) }));
    // The scan finds the classes the API logs or answers with, under their names...
    expect(bundles.find((b) => b.name === 'api')?.classes).toEqual(expect.arrayContaining(['DatabaseError', 'ApiError']));
    // ...and none that esbuild renamed: `X2` to keep it apart from another symbol, `_X` for a
    // class that refers to itself.
    expect(bundles.flatMap((b) => b.classes.filter((c) => /^_|\d+$/.test(c)).map((c) => `${b.name}: ${c}`))).toEqual([]);
  });
});
