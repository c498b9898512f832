import type { IncomingMessage } from 'node:http';
import { createLogger } from '@herald/logging';
import { describe, expect, it, vi } from 'vitest';
import { createOperatorGate, OPERATOR_STALE_GRACE_MS, OperatorKeysBusy, OperatorKeysUnreachable } from './operator-gate.ts';

/** An operator key in the format Herald mints (OPERATOR_KEY_FORMAT), named for the test. */
const opKey = (name: string): string => `hko_${'0'.repeat(12)}_${name.padEnd(43, '0')}`;

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

const silent = createLogger({ service: 'operator-gate-spec', level: 'silent' });

describe('operator gate', () => {
  const live = new Set([opKey('good')]);
  const keys = { findOperatorByKey: async (key: string) => (live.has(key) ? { id: 'op1', name: 'ann' } : undefined) };

  it('knows an operator by bearer key or by a session opened with one, and nobody else', async () => {
    let t = 0;
    const gate = createOperatorGate(keys, 0, silent, () => t);
    expect(await gate.authenticate(req({}))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: `Bearer ${opKey('bad')}` }))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: `Bearer ${opKey('good')}` }))).toEqual({
      id: 'op1',
      name: 'ann',
      via: 'bearer',
    });
    expect(await gate.login(opKey('bad'), false)).toBeUndefined();
    const opened = await gate.login(opKey('good'), true);
    expect(opened?.cookie).toMatch(
      /^herald_operator_session=[\w-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200; Secure$/,
    );
    const cookie = (opened?.cookie ?? '').split(';')[0] ?? '';
    expect(await gate.authenticate(req({ cookie: `other=1; ${cookie}` }))).toEqual({
      id: 'op1',
      name: 'ann',
      via: 'session',
    });
    expect(await gate.authenticate(req({ cookie: 'herald_operator_session=forged' }))).toBeUndefined();
    // Sessions end after 12 hours, and with the key's revocation.
    t += 12 * 3_600_000;
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
    const again = ((await gate.login(opKey('good'), false))?.cookie ?? '').split(';')[0] ?? '';
    live.delete(opKey('good'));
    expect(await gate.authenticate(req({ cookie: again }))).toBeUndefined();
    live.add(opKey('good'));
    expect(await gate.authenticate(req({ cookie: again }))).toBeUndefined();
  });

  it('logout ends the session', async () => {
    const gate = createOperatorGate(keys, 0, silent);
    const cookie = ((await gate.login(opKey('good'), false))?.cookie ?? '').split(';')[0] ?? '';
    expect(gate.logout(req({ cookie }))).toMatch(/Max-Age=0/);
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
  });
});

describe('operator gate while the database that holds operator keys does not answer', () => {
  const TTL_MS = 5_000;
  /** api_keys as the gate reads it: live keys, and whether PostgreSQL answers at all. */
  const store = () => {
    const live = new Set([opKey('good'), opKey('idle'), opKey('other')]);
    const db = { down: false };
    const keys = {
      findOperatorByKey: async (key: string) => {
        if (db.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        return live.has(key) ? { id: key, name: 'ann' } : undefined;
      },
    };
    return { live, db, keys };
  };
  const bearer = (key: string) => req({ authorization: `Bearer ${key}` });

  it('keeps an operator it confirmed within the grace, refuses with 503 one it cannot check, and hears a revocation at the first answer', async () => {
    const { live, db, keys } = store();
    let t = 0;
    const gate = createOperatorGate(keys, TTL_MS, silent, () => t);
    const cookie = ((await gate.login(opKey('good'), false))?.cookie ?? '').split(';')[0] ?? '';
    expect(await gate.authenticate(bearer(opKey('idle')))).toMatchObject({ id: opKey('idle'), via: 'bearer' });

    db.down = true;
    t += TTL_MS;
    expect(await gate.authenticate(req({ cookie }))).toMatchObject({ id: opKey('good'), via: 'session' });
    expect(await gate.authenticate(bearer(opKey('good')))).toMatchObject({ id: opKey('good'), via: 'bearer' });
    // A live key this monitor never had confirmed: nothing vouches for it, and it is not "unknown" either.
    await expect(gate.authenticate(bearer(opKey('other')))).rejects.toThrow(OperatorKeysUnreachable);
    await expect(gate.login(opKey('other'), false)).rejects.toThrow('the database that holds operator keys is unreachable');
    await expect(gate.authenticate(bearer(opKey('never')))).rejects.toThrow(OperatorKeysUnreachable);

    // Revoked while the database was away: refused at its first answer, and the earlier
    // confirmation does not vouch for it when the database goes away again.
    db.down = false;
    live.delete(opKey('good'));
    t += TTL_MS;
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
    expect(await gate.authenticate(bearer(opKey('good')))).toBeUndefined();
    db.down = true;
    t += TTL_MS;
    await expect(gate.authenticate(bearer(opKey('good')))).rejects.toThrow(OperatorKeysUnreachable);

    // The grace is bounded, counted from the database's last answer for the key.
    expect(await gate.authenticate(bearer(opKey('idle')))).toMatchObject({ id: opKey('idle') });
    t = OPERATOR_STALE_GRACE_MS + TTL_MS;
    await expect(gate.authenticate(bearer(opKey('idle')))).rejects.toThrow(OperatorKeysUnreachable);
  });

  it('logs an outage once when lookups start failing and once when the database answers again, not per request', async () => {
    const { db, keys } = store();
    const logger = createLogger({ service: 'operator-gate-spec', level: 'silent' });
    const warn = vi.spyOn(logger, 'warn');
    const info = vi.spyOn(logger, 'info');
    let t = 0;
    const gate = createOperatorGate(keys, TTL_MS, logger, () => t);
    await gate.login(opKey('good'), false);
    db.down = true;
    for (let i = 0; i < 5; i++) {
      t += TTL_MS;
      await gate.authenticate(bearer(opKey('good')));
      await gate.authenticate(bearer(opKey('never'))).catch(() => undefined);
    }
    expect(warn.mock.calls.map(([, msg]) => msg)).toEqual([
      expect.stringMatching(/^operator keys cannot be checked: the database does not answer/),
    ]);
    db.down = false;
    t += TTL_MS;
    await gate.authenticate(bearer(opKey('good')));
    await gate.authenticate(bearer(opKey('other')));
    expect(info.mock.calls.map(([, msg]) => msg)).toEqual(['operator keys are checked against the database again']);
    db.down = true;
    t += TTL_MS;
    await gate.authenticate(bearer(opKey('good')));
    expect(warn).toHaveBeenCalledTimes(2);
  });
});

// Anyone who reached the monitor's port could send made-up keys, each a query on a pool of two
// connections shared with the alarms lease.
describe('operator gate against a flood of made-up keys', () => {
  const bearer = (key: string) => req({ authorization: `Bearer ${key}` });
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('refuses a key not in the format Herald mints without asking the database', async () => {
    const asked: string[] = [];
    const keys = {
      findOperatorByKey: async (key: string) => {
        asked.push(key);
        return key === opKey('ann') ? { id: 'op1', name: 'ann' } : undefined;
      },
    };
    const gate = createOperatorGate(keys, 0, silent);
    const malformed = ['admin', 'hko_restart_spec', `hko_${'0'.repeat(12)}_short`, `${opKey('ann')}=`, opKey('ann').replace('hko_', 'hk_'), `hko_${'G'.repeat(12)}_${'0'.repeat(43)}`];
    for (const key of malformed) expect(await gate.authenticate(bearer(key)), key).toBeUndefined();
    expect(await gate.login('admin', false)).toBeUndefined();
    expect(asked).toEqual([]);
    expect(await gate.authenticate(bearer(opKey('ann')))).toMatchObject({ id: 'op1', via: 'bearer' });
    expect(await gate.authenticate(bearer(opKey('nobody')))).toBeUndefined();
    expect(asked).toEqual([opKey('ann'), opKey('nobody')]);
  });

  it('asks the database one key at a time: a flood waits its turn or is refused at once, and an operator it confirmed goes first', async () => {
    const asked: string[] = [];
    const answers: Array<() => void> = [];
    let inFlight = 0;
    let most = 0;
    const keys = {
      findOperatorByKey: async (key: string) => {
        asked.push(key);
        most = Math.max(most, ++inFlight);
        await new Promise<void>((resolve) => answers.push(resolve));
        inFlight -= 1;
        return key === opKey('ann') ? { id: 'op1', name: 'ann' } : undefined;
      },
    };
    const answerOne = async () => {
      answers.shift()?.();
      await settle();
    };
    const gate = createOperatorGate(keys, 0, silent, Date.now, { maxWaiting: 3, waitMs: 60_000 });
    const first = gate.authenticate(bearer(opKey('ann')));
    await settle();
    await answerOne();
    expect(await first).toMatchObject({ id: 'op1' });

    const flood = Array.from({ length: 10 }, (_, i) => gate.authenticate(bearer(opKey(`guess${i}`))).catch((err: unknown) => err));
    const ann = gate.authenticate(bearer(opKey('ann')));
    await settle();
    // One asked, three waiting, six refused at once; the operator waits too, but ahead of the flood.
    expect([inFlight, asked.length]).toEqual([1, 2]);
    for (const refused of await Promise.all(flood.slice(4))) expect(refused).toBeInstanceOf(OperatorKeysBusy);
    await answerOne();
    expect(asked.at(-1)).toBe(opKey('ann'));
    await answerOne();
    expect(await ann).toMatchObject({ id: 'op1', via: 'bearer' });
    while (answers.length > 0) await answerOne();
    expect(await Promise.all(flood.slice(0, 4))).toEqual([undefined, undefined, undefined, undefined]);
    expect(most).toBe(1);
  });

  it('refuses with OperatorKeysBusy (503) a lookup that waited its bound for its turn', async () => {
    const keys = { findOperatorByKey: () => new Promise<undefined>(() => undefined) };
    const gate = createOperatorGate(keys, 0, silent, Date.now, { waitMs: 20 });
    void gate.authenticate(bearer(opKey('stuck')));
    await expect(gate.authenticate(bearer(opKey('next')))).rejects.toThrow(OperatorKeysBusy);
  });

  // An unreachable database host: one lookup waits out its connect timeout holding the only turn; before, a confirmed operator behind it got 503.
  it('lets an operator confirmed within the grace in while the database does not answer and another lookup holds the turn', async () => {
    let mode: 'up' | 'down' | 'hang' = 'up';
    const keys = {
      findOperatorByKey: (key: string) =>
        mode === 'up' ? Promise.resolve(key === opKey('good') ? { id: 'op1', name: 'ann' } : undefined) : mode === 'down' ? Promise.reject(new Error('connect ETIMEDOUT')) : new Promise<undefined>(() => undefined),
    };
    const gate = createOperatorGate(keys, 0, silent, Date.now, { waitMs: 20 });
    expect(await gate.authenticate(bearer(opKey('good')))).toMatchObject({ id: 'op1' });
    mode = 'down';
    await expect(gate.authenticate(bearer(opKey('someone')))).rejects.toThrow(OperatorKeysUnreachable);
    mode = 'hang';
    void gate.authenticate(bearer(opKey('made-up'))).catch(() => undefined);
    expect(await gate.authenticate(bearer(opKey('good')))).toMatchObject({ id: 'op1' });
    // A key it never confirmed is still refused.
    await expect(gate.authenticate(bearer(opKey('other')))).rejects.toThrow(OperatorKeysBusy);
  });
});
