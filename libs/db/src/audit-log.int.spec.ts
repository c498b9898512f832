import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@herald/logging';
import { ActionRefused, audited } from './audit-log.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const logger = createLogger({ service: 'spec', level: 'fatal', format: 'json' });
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('audit');
});
afterAll(() => t?.drop());

describe('operator keys in the key store', () => {
  it('are a class of their own: an operator key is no team key and a team key no operator key', async () => {
    const op = await t.db.apiKeys.createOperator('ann');
    const team = await t.db.apiKeys.create('team-a', ['*']);
    expect(op.key).toMatch(/^hko_[0-9a-f]{12}_/);
    expect(op.row).toMatchObject({ kind: 'operator', team: 'ann', apps: [] });
    expect(await t.db.apiKeys.findOperatorByKey(op.key)).toEqual({ id: op.row.id, name: 'ann' });
    expect(await t.db.apiKeys.findByKey(op.key)).toBeUndefined();
    expect(await t.db.apiKeys.findOperatorByKey(team.key)).toBeUndefined();
    expect((await t.db.apiKeys.findByKey(team.key))?.kind).toBe('team');
    const stored = await t.db.kysely
      .selectFrom('api_keys')
      .select('key_hash')
      .where('id', '=', op.row.id)
      .executeTakeFirstOrThrow();
    expect(stored.key_hash).not.toContain(op.key.slice(20));
    expect(await t.db.apiKeys.revoke(op.row.id)).toBe(true);
    expect(await t.db.apiKeys.findOperatorByKey(op.key)).toBeUndefined();
  });

  it('the table refuses an operator key with apps and a team key without', async () => {
    const insert = (kind: string, apps: string) =>
      sql`insert into api_keys (id, team, key_hash, apps, kind) values (${kind + apps.length}, 'x', ${`h-${kind}-${apps}`}, ${apps}::text[], ${kind})`.execute(
        t.db.kysely,
      );
    await expect(insert('operator', '{demo}')).rejects.toThrow(/api_keys_apps_by_kind/);
    await expect(insert('team', '{}')).rejects.toThrow(/api_keys_apps_by_kind/);
  });
});

describe('audit log', () => {
  const actor = { kind: 'operator' as const, id: 'op1', name: 'ann' };

  it('records an action before it runs and finishes it with the result, refusal or error', async () => {
    const ok = await audited(
      t.db.audit,
      logger,
      actor,
      { action: 'parked.replay', target: 'push.jobs.parked', request: { id: 'm1', force: false } },
      async () => {
        const [row] = await t.db.audit.list({ limit: 1 });
        expect(row).toMatchObject({ outcome: 'started', finishedAt: null, request: { id: 'm1' } });
        return { replayed: 1 };
      },
    );
    expect(ok).toEqual({ replayed: 1 });
    await expect(
      audited(t.db.audit, logger, actor, { action: 'parked.replay', target: 'q' }, () =>
        Promise.reject(new ActionRefused('permanent', { replayed: 0 })),
      ),
    ).rejects.toThrow('permanent');
    await expect(
      audited(t.db.audit, logger, { kind: 'cli', id: 'me@host', name: 'me' }, { action: 'parked.purge', target: 'q' }, () =>
        Promise.reject(new Error('broker down')),
      ),
    ).rejects.toThrow('broker down');

    const rows = await t.db.audit.list();
    expect(rows.map((r) => [r.action, r.actor.name, r.outcome, r.result])).toEqual([
      ['parked.purge', 'me', 'failed', { error: 'broker down' }],
      ['parked.replay', 'ann', 'refused', { reason: 'permanent', replayed: 0 }],
      ['parked.replay', 'ann', 'ok', { replayed: 1 }],
    ]);
    expect(rows.every((r) => r.finishedAt !== null && r.at.getTime() <= r.finishedAt.getTime())).toBe(true);
    expect((await t.db.audit.list({ action: 'parked.purge' })).length).toBe(1);
    expect((await t.db.audit.list({ actorId: 'op1', limit: 1 })).map((r) => r.outcome)).toEqual(['refused']);
  });

  it('does not run an action it cannot record', async () => {
    const broken = { ...t.db.audit, start: () => Promise.reject(new Error('database down')) };
    let ran = false;
    await expect(
      audited(broken, logger, actor, { action: 'parked.replay', target: 'q' }, async () => (ran = true)),
    ).rejects.toThrow('database down');
    expect(ran).toBe(false);
  });
});
