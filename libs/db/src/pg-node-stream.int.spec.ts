import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '@herald/testing';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/**
 * pg asks at load whether it runs in a Cloudflare Worker. On Node.js 20, which has no `navigator`,
 * it asked by creating a `Response`, and that made Node load its whole fetch implementation
 * (undici) in every Herald service: about 2 MB of heap and 3 MB of resident memory each, kept for
 * the life of the process, in services that never fetch anything. patches/pg+8.23.1.patch answers
 * from `process.release` first.
 */
describe('pg under Node.js', () => {
  it('queries PostgreSQL over a Node socket without loading Node’s fetch implementation', async () => {
    const code = [
      "const pg = require('pg');",
      'const client = new pg.Client({ connectionString: process.argv[1] });',
      "client.connect().then(() => client.query('select 1 + 1 as two')).then(async (r) => {",
      '  await client.end();',
      "  const undici = process.moduleLoadList.some((name) => name.includes('undici'));",
      '  console.log(JSON.stringify({ two: r.rows[0].two, undici }));',
      '});',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', code, TEST_DATABASE_URL], { cwd: ROOT, timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ two: 2, undici: false });
  }, 30_000);
});
