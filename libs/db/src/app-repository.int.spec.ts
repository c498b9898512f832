import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('apps');
});
afterAll(() => t.drop());

describe('AppRepository', () => {
  it('inserts with defaults, then updates only the fields given', async () => {
    const created = await t.db.apps.upsert({ id: 'chat', apnsTopic: 'com.example.chat' });
    expect(created).toMatchObject({ id: 'chat', apnsTopic: 'com.example.chat', fcmProjectId: null, enabled: true });
    const updated = await t.db.apps.upsert({ id: 'chat', enabled: false });
    expect(updated).toMatchObject({ apnsTopic: 'com.example.chat', enabled: false });
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());
    expect(await t.db.apps.get('chat')).toEqual(updated);
  });

  it('answers undefined for an unknown app and lists apps by id', async () => {
    await t.db.apps.upsert({ id: 'alpha', fcmProjectId: 'proj-1' });
    expect(await t.db.apps.get('nope')).toBeUndefined();
    expect((await t.db.apps.list()).map((a) => a.id)).toEqual(['alpha', 'chat']);
  });

  it('rejects an app id the contracts would reject', async () => {
    await expect(t.db.apps.upsert({ id: 'Has Spaces' })).rejects.toThrow(/check constraint/);
  });
});
