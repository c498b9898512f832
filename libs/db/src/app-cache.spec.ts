import { describe, expect, it } from 'vitest';
import { createAppCache } from './app-cache.ts';
import type { AppRow } from './app-repository.ts';

const row = (id: string): AppRow => ({
  id,
  apnsTopic: null,
  fcmProjectId: null,
  enabled: true,
  createdAt: new Date(0),
  updatedAt: new Date(0),
});

function fakeRepo(known: string[]) {
  const calls: string[] = [];
  let fail = false;
  return {
    calls,
    failNext: () => (fail = true),
    async get(id: string) {
      calls.push(id);
      if (fail) {
        fail = false;
        throw new Error('db down');
      }
      return known.includes(id) ? row(id) : undefined;
    },
  };
}

describe('createAppCache', () => {
  it('caches hits and misses until the ttl passes', async () => {
    let clock = 0;
    const repo = fakeRepo(['a']);
    const cache = createAppCache(repo, 1000, () => clock);
    expect((await cache.get('a'))?.id).toBe('a');
    expect(await cache.get('missing')).toBeUndefined();
    clock = 999;
    await cache.get('a');
    await cache.get('missing');
    expect(repo.calls).toEqual(['a', 'missing']);
    clock = 1000;
    await cache.get('a');
    expect(repo.calls).toEqual(['a', 'missing', 'a']);
  });

  it('shares one lookup between concurrent callers', async () => {
    const repo = fakeRepo(['a']);
    const cache = createAppCache(repo, 1000);
    await Promise.all([cache.get('a'), cache.get('a'), cache.get('a')]);
    expect(repo.calls).toEqual(['a']);
  });

  it('does not cache a failed lookup', async () => {
    const repo = fakeRepo(['a']);
    const cache = createAppCache(repo, 1000);
    repo.failNext();
    await expect(cache.get('a')).rejects.toThrow('db down');
    expect((await cache.get('a'))?.id).toBe('a');
    expect(repo.calls).toEqual(['a', 'a']);
  });
});
