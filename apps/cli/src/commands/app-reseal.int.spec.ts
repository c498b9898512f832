import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppCredentialStore, createSecretBox } from '@herald/db';
import { createTestDatabase, type TestDatabase } from '@herald/testing';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('cli_reseal');
});
afterAll(() => t?.drop());

/** `herald …` with HERALD_SECRET_KEY set to `key`, against this file's schema. */
function herald(key: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema, HERALD_SECRET_KEY: key };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
  });
}

describe('herald apps reseal', () => {
  // Before, HERALD_SECRET_KEY held one key: replacing it left every app's credentials unopenable.
  it('seals the secrets the old key sealed by the new one, audited, so the old key can go; says which no key opens and exits 1', async () => {
    const [oldKey, newKey] = [randomBytes(32).toString('hex'), randomBytes(32).toString('base64')];
    const fcm = (token: string) => ({ auth: 'access-token' as const, accessToken: token, projectId: 'p', endpoint: 'google' as const });
    await createAppCredentialStore(t.db.kysely, createSecretBox(oldKey)).create({ id: 'chat', enabled: true, fcm: fcm('ya29.chat') });

    const done = await herald(`${newKey},${oldKey}`, 'apps', 'reseal');
    expect(done).toEqual({ code: 0, stdout: 'resealed 1 secret(s) of 1 app(s) by the first key; 0 sealed by it already\n', stderr: '' });
    expect(await createAppCredentialStore(t.db.kysely, createSecretBox(newKey)).readFcm('chat')).toMatchObject({ accessToken: 'ya29.chat' });
    const audit = await t.db.kysely.selectFrom('audit_log').select(['action', 'target', 'outcome', 'result']).where('action', '=', 'apps.reseal').execute();
    expect(audit).toEqual([{ action: 'apps.reseal', target: 'apps', outcome: 'ok', result: expect.objectContaining({ apps: 1, resealed: 1 }) }]);

    // An app sealed by a key not given: named, left as it is, exit 1.
    await createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex'))).create({ id: 'lost', enabled: true, fcm: fcm('x') });
    const partial = await herald(newKey, 'apps', 'reseal');
    expect(partial.code).toBe(1);
    expect(partial.stdout).toBe('resealed 0 secret(s) of 2 app(s) by the first key; 1 sealed by it already\n');
    expect(partial.stderr).toMatch(/^app "lost" fcm_secret: the secret cannot be opened.*\n1 secret\(s\) opened by none of the keys given were left as they are: keep the key that sealed them in HERALD_SECRET_KEY\n$/);

    // A list entry that is not a key is named before anything is read.
    const bad = await herald(`${newKey},nope`, 'apps', 'reseal');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('key 2 of 2: the secret key must be 32 bytes');
  });
});
