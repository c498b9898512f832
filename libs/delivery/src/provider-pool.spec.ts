import type { AppRow } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { PushProvider } from '@herald/providers';
import { describe, expect, it } from 'vitest';
import { createProviderPool } from './provider-pool.ts';

const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
const app = (id: string, version: number | undefined, own = true): AppRow => ({
  id, apnsTopic: 't', fcmProjectId: null, enabled: true, createdAt: new Date(0), updatedAt: new Date(0),
  apnsAuth: own ? 'token' : null, credentialsVersion: version,
});

function fakes() {
  const built: string[] = [];
  const closed: string[] = [];
  const provider = (name: string): PushProvider => ({
    platform: 'apns',
    send: async () => ({ kind: 'delivered', providerMessageId: name }),
    close: async () => void closed.push(name),
  });
  return { built, closed, provider };
}

describe('provider pool', () => {
  it('builds one provider per app on demand and reuses it; apps without credentials share the fallback', async () => {
    const f = fakes();
    const pool = createProviderPool({
      platform: 'apns', idleMs: 60_000, logger,
      fallback: async () => f.provider('fallback'),
      hasOwn: (a) => a.apnsAuth != null,
      build: async (a) => (f.built.push(`${a.id}@${a.credentialsVersion}`), f.provider(`${a.id}@${a.credentialsVersion}`)),
    });
    const push = {} as never;
    expect(await (await pool.get(app('a', 1))).send(push, {})).toEqual({ kind: 'delivered', providerMessageId: 'a@1' });
    expect(await (await pool.get(app('a', 1))).send(push, {})).toEqual({ kind: 'delivered', providerMessageId: 'a@1' });
    expect(await (await pool.get(app('b', 3))).send(push, {})).toEqual({ kind: 'delivered', providerMessageId: 'b@3' });
    expect(await (await pool.get(app('plain', 0, false))).send(push, {})).toEqual({ kind: 'delivered', providerMessageId: 'fallback' });
    expect(f.built).toEqual(['a@1', 'b@3']);
    await pool.close();
    expect(f.closed.sort()).toEqual(['a@1', 'b@3', 'fallback']);
  });

  it('rebuilds when the credentials version moves and closes the old provider once idle of sends', async () => {
    const f = fakes();
    const pool = createProviderPool({ platform: 'apns', idleMs: 60_000, logger, fallback: async () => f.provider('fb'), hasOwn: () => true, build: async (a) => f.provider(`${a.id}@${a.credentialsVersion}`) });
    await (await pool.get(app('a', 1))).send({} as never, {});
    expect(await (await pool.get(app('a', 2))).send({} as never, {})).toMatchObject({ providerMessageId: 'a@2' });
    await pool.sweep();
    expect(f.closed).toEqual(['a@1']);
    await pool.close();
  });

  it('closes a provider idle for idleMs and builds it again when needed', async () => {
    const f = fakes();
    let t = 0;
    let builds = 0;
    const pool = createProviderPool({ platform: 'apns', idleMs: 1000, logger, now: () => t, fallback: async () => f.provider('fb'), hasOwn: () => true, build: async () => (builds++, f.provider(`p${builds}`)) });
    await (await pool.get(app('a', 1))).send({} as never, {});
    t = 500;
    await pool.sweep();
    expect(pool.apps()).toEqual(['a']);
    t = 1600;
    await pool.sweep();
    expect(pool.apps()).toEqual([]);
    expect(f.closed).toEqual(['p1']);
    await pool.get(app('a', 1));
    expect(builds).toBe(2);
    await pool.close();
  });

  it("an app's provider keeps its checks (prepare), and its send is handed what they made, so a push it refuses takes no budget", async () => {
    const handed: unknown[] = [];
    const refusal = { kind: 'permanent', reason: 'no APNs topic for this app', notSent: true } as const;
    const checking: PushProvider = {
      platform: 'apns',
      prepare: (push) => ((push as { refuse?: boolean }).refuse === true ? refusal : ({ made: 1 } as never)),
      send: async (_push, _target, prepared, stale) => (handed.push([prepared, stale]), { kind: 'delivered' }),
      close: async () => undefined,
    };
    // An app of its own credentials whose provider makes no checks before send.
    const unchecking = fakes().provider('plain');
    const pool = createProviderPool({ platform: 'apns', idleMs: 60_000, logger, fallback: async () => fakes().provider('fb'), hasOwn: (a) => a.apnsAuth != null, build: async (a) => (a.id === 'plain' ? unchecking : checking) });
    const provider = await pool.get(app('a', 1));
    expect(provider.prepare?.({ refuse: true } as never, {})).toEqual(refusal);
    const made = provider.prepare?.({} as never, {});
    expect(made).toEqual({ made: 1 });
    await provider.send({} as never, {}, made as never, true);
    expect(handed).toEqual([[{ made: 1 }, true]]);
    // A provider without checks of its own: its tracked wrapper has none either, so the pusher leaves them to its send.
    const plain = await pool.get(app('plain', 1));
    expect(plain).not.toBe(unchecking);
    expect(plain).not.toHaveProperty('prepare');
    expect(await plain.send({} as never, {})).toEqual({ kind: 'delivered', providerMessageId: 'plain' });
    await pool.close();
  });

  it('rejects when credentials cannot be built (the pusher parks those pushes as credential failures)', async () => {
    const pool = createProviderPool({ platform: 'fcm', idleMs: 1000, logger, fallback: async () => fakes().provider('fb'), hasOwn: () => true, build: async () => { throw new Error('bad key'); } });
    await expect(pool.get(app('a', 1))).rejects.toThrow('bad key');
    await pool.close();
  });
});
