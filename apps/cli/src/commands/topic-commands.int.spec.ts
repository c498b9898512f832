import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@herald/testing';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase('cli_topics');
  await t.db.apps.upsert({ id: 'legacy' });
});
afterAll(() => t?.drop());

/** `herald …` as a person runs it, against this file's schema: exit code, stdout and stderr. */
function herald(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
  });
}

const topicNames = async () => (await t.db.kysely.selectFrom('topics').select('name').where('app', '=', 'legacy').orderBy('name').execute()).map((r) => r.name);

describe('herald topics and a topic named with dots only (created before such names were refused)', () => {
  it('shows it, lists past it and deletes it; subscribing to it stays refused, naming the field', async () => {
    // Before, show and delete refused the name ('topic: must not be dots only'): such a topic could not be removed.
    await t.db.kysely.insertInto('topics').values([{ app: 'legacy', name: '.' }, { app: 'legacy', name: '..' }, { app: 'legacy', name: 'news' }]).execute();
    const shown = await herald('topics', 'show', '..', '--app', 'legacy', '--json');
    expect([shown.code, shown.stderr]).toEqual([0, '']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ app: 'legacy', name: '..', subscribers: 0 });
    const listed = await herald('topics', 'list', '--app', 'legacy', '--after', '.', '--json');
    expect([listed.code, listed.stderr]).toEqual([0, '']);
    expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((r) => r.name)).toEqual(['..', 'news']);

    expect(await herald('topics', 'delete', '..', '--app', 'legacy')).toEqual({ code: 0, stdout: 'topic .. of legacy deleted\n', stderr: '' });
    expect(await herald('topics', 'delete', '.', '--app', 'legacy')).toEqual({ code: 0, stdout: 'topic . of legacy deleted\n', stderr: '' });
    expect(await topicNames()).toEqual(['news']);

    const subscribe = await herald('topics', 'subscribe', '..', '--app', 'legacy', '--user', 'u1');
    expect(subscribe.code).not.toBe(0);
    expect(subscribe.stderr).toMatch(/topic: .*must not be dots only/);
    const create = await herald('topics', 'create', '.', '--app', 'legacy');
    expect(create.code).not.toBe(0);
    expect(create.stderr).toMatch(/topic: .*must not be dots only/);
  });
});
