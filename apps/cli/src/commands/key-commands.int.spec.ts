import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@herald/testing';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('cli_keys');
});
afterAll(async () => t?.drop());

/** `herald …` as a person runs it, against this file's schema. */
function herald(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return heraldWith({}, ...args);
}

function heraldWith(settings: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema, HERALD_DEBUG: 'false', ...settings };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
  });
}

describe('herald keys revoke, given what an operator pastes', () => {
  // Before, a paste that did not begin with the key was taken whole for an id: the secret written to the audit log, nothing revoked.
  it('finds the id in a line holding the key, and refuses anything else without writing it anywhere', async () => {
    const { key, row: { id } } = await t.db.apiKeys.createOperator('dana');
    expect(await herald('keys', 'revoke', `HERALD_OPERATOR_KEY=${key}`)).toMatchObject({ code: 0, stdout: `key ${id} revoked\n` });
    expect((await t.db.apiKeys.list()).find((k) => k.id === id)?.revokedAt).toBeInstanceOf(Date);
    const secretShaped = `HERALD_OPERATOR_KEY=hko-${key.slice(4)}`;
    const refused = await herald('keys', 'revoke', secretShaped);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/give a key id \(12 hex characters/)]);
    expect(`${refused.stdout}${refused.stderr}`).not.toContain(key.slice(4));
    expect(JSON.stringify(await t.db.audit.list({ limit: 10 }))).not.toContain(key.slice(4));
  });
});

describe("a refused CLI action's output", () => {
  // Before, the audit's warning (a JSON line) went to stdout, into the output a script reads.
  it('is one line in words on stderr, nothing on stdout, and the refusal is in the audit log', async () => {
    const refused = await herald('keys', 'revoke', '0123456789ab');
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^herald: no live key 0123456789ab: /)]);
    expect(await t.db.audit.list({ limit: 1 })).toEqual([expect.objectContaining({ action: 'key.revoke', target: '0123456789ab', outcome: 'refused' })]);
  });

  // The line of words alone said nothing of where an unexpected failure (PostgreSQL gone, a bug) arose.
  it('is followed by where it arose with HERALD_DEBUG=1', async () => {
    const refused = await heraldWith({ HERALD_DEBUG: '1' }, 'keys', 'revoke', '0123456789ab');
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    const [first, ...frames] = refused.stderr.trim().split('\n');
    expect(first).toMatch(/^herald: no live key 0123456789ab: /);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((line) => /^\s+at /.test(line))).toBe(true);
    expect(frames.join('\n')).toContain('key-commands.ts');
  });
});
