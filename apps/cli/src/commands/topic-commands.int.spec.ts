import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAudienceStore } from '@herald/db';
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

/** `n` user members u1..un of the app's topic, straight into the table. */
const fill = (topic: string, n: number) =>
  t.db.kysely
    .insertInto('topic_members')
    .values(Array.from({ length: n }, (_, i) => ({ app: 'legacy', topic, member_kind: 'user', member_id: `u${i + 1}`, subscribed: true, event_at: new Date(Date.now() - 86_400_000) })))
    .execute();
const memberRows = async (topic: string) =>
  Number(
    (await t.db.kysely.selectFrom('topic_members').select((eb) => eb.fn.countAll<string>().as('n')).where('app', '=', 'legacy').where('topic', '=', topic).executeTakeFirstOrThrow()).n,
  );

describe('herald topics delete|create of a topic with members', () => {
  it('deletes it, then removes its memberships and says how many', async () => {
    await t.db.kysely.insertInto('topics').values({ app: 'legacy', name: 'crowd' }).execute();
    await fill('crowd', 1_500);
    expect(await herald('topics', 'delete', 'crowd', '--app', 'legacy')).toEqual({ code: 0, stdout: 'topic crowd of legacy deleted\n1500 memberships removed\n', stderr: '' });
    expect(await memberRows('crowd')).toBe(0);
    expect(await topicNames()).not.toContain('crowd');
  });

  // Before, it removed them (minutes for millions) and then failed with "unknown topic", not saying it had.
  it('deleted before, its memberships left (its removal cut short): removes them and says so, exit 0; with none left, unknown topic', async () => {
    await t.db.kysely.insertInto('topics').values({ app: 'legacy', name: 'cut' }).execute();
    await fill('cut', 700);
    expect(await createAudienceStore(t.db.kysely).deleteTopic('legacy', 'cut')).toBe(true);
    expect(await herald('topics', 'delete', 'cut', '--app', 'legacy')).toEqual({
      code: 0,
      stdout: 'no topic cut of app legacy; 700 leftover memberships of its deletion removed\n',
      stderr: '',
    });
    expect(await memberRows('cut')).toBe(0);
    expect(await herald('topics', 'delete', 'cut', '--app', 'legacy')).toEqual({ code: 1, stdout: '', stderr: 'herald: unknown topic "cut" of app "legacy"\n' });
  });

  it('created again while memberships of its deletion remain: removes them first, says how many, and the new topic has none', async () => {
    await t.db.kysely.insertInto('topics').values({ app: 'legacy', name: 'reborn' }).execute();
    await fill('reborn', 900);
    expect(await createAudienceStore(t.db.kysely).deleteTopic('legacy', 'reborn')).toBe(true);
    expect(await herald('topics', 'create', 'reborn', '--app', 'legacy')).toEqual({
      code: 0,
      stdout: '900 memberships left by an earlier deletion of topic reborn of legacy removed\ntopic reborn of legacy created\n',
      stderr: '',
    });
    expect(await memberRows('reborn')).toBe(0);
    const shown = await herald('topics', 'show', 'reborn', '--app', 'legacy', '--json');
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: 'reborn', subscribers: 0 });
  });
});
