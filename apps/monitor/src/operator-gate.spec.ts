import type { IncomingMessage } from 'node:http';
import { createLogger } from '@herald/logging';
import { describe, expect, it, vi } from 'vitest';
import { createOperatorGate, OPERATOR_STALE_GRACE_MS, OperatorKeysUnreachable } from './operator-gate.ts';

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

const silent = createLogger({ service: 'operator-gate-spec', level: 'silent' });

describe('operator gate', () => {
  const live = new Set(['hko_good']);
  const keys = { findOperatorByKey: async (key: string) => (live.has(key) ? { id: 'op1', name: 'ann' } : undefined) };

  it('knows an operator by bearer key or by a session opened with one, and nobody else', async () => {
    let t = 0;
    const gate = createOperatorGate(keys, 0, silent, () => t);
    expect(await gate.authenticate(req({}))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: 'Bearer hko_bad' }))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: 'Bearer hko_good' }))).toEqual({
      id: 'op1',
      name: 'ann',
      via: 'bearer',
    });
    expect(await gate.login('hko_bad', false)).toBeUndefined();
    const opened = await gate.login('hko_good', true);
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
    const again = ((await gate.login('hko_good', false))?.cookie ?? '').split(';')[0] ?? '';
    live.delete('hko_good');
    expect(await gate.authenticate(req({ cookie: again }))).toBeUndefined();
    live.add('hko_good');
    expect(await gate.authenticate(req({ cookie: again }))).toBeUndefined();
  });

  it('logout ends the session', async () => {
    const gate = createOperatorGate(keys, 0, silent);
    const cookie = ((await gate.login('hko_good', false))?.cookie ?? '').split(';')[0] ?? '';
    expect(gate.logout(req({ cookie }))).toMatch(/Max-Age=0/);
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
  });
});

describe('operator gate while the database that holds operator keys does not answer', () => {
  const TTL_MS = 5_000;
  /** api_keys as the gate reads it: live keys, and whether PostgreSQL answers at all. */
  const store = () => {
    const live = new Set(['hko_good', 'hko_idle', 'hko_other']);
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
    const cookie = ((await gate.login('hko_good', false))?.cookie ?? '').split(';')[0] ?? '';
    expect(await gate.authenticate(bearer('hko_idle'))).toMatchObject({ id: 'hko_idle', via: 'bearer' });

    db.down = true;
    t += TTL_MS;
    expect(await gate.authenticate(req({ cookie }))).toMatchObject({ id: 'hko_good', via: 'session' });
    expect(await gate.authenticate(bearer('hko_good'))).toMatchObject({ id: 'hko_good', via: 'bearer' });
    // A live key this monitor never had confirmed: nothing vouches for it, and it is not "unknown" either.
    await expect(gate.authenticate(bearer('hko_other'))).rejects.toThrow(OperatorKeysUnreachable);
    await expect(gate.login('hko_other', false)).rejects.toThrow('the database that holds operator keys is unreachable');
    await expect(gate.authenticate(bearer('hko_never'))).rejects.toThrow(OperatorKeysUnreachable);

    // Revoked while the database was away: refused at its first answer, and the earlier
    // confirmation does not vouch for it when the database goes away again.
    db.down = false;
    live.delete('hko_good');
    t += TTL_MS;
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
    expect(await gate.authenticate(bearer('hko_good'))).toBeUndefined();
    db.down = true;
    t += TTL_MS;
    await expect(gate.authenticate(bearer('hko_good'))).rejects.toThrow(OperatorKeysUnreachable);

    // The grace is bounded, counted from the database's last answer for the key.
    expect(await gate.authenticate(bearer('hko_idle'))).toMatchObject({ id: 'hko_idle' });
    t = OPERATOR_STALE_GRACE_MS + TTL_MS;
    await expect(gate.authenticate(bearer('hko_idle'))).rejects.toThrow(OperatorKeysUnreachable);
  });

  it('logs an outage once when lookups start failing and once when the database answers again, not per request', async () => {
    const { db, keys } = store();
    const logger = createLogger({ service: 'operator-gate-spec', level: 'silent' });
    const warn = vi.spyOn(logger, 'warn');
    const info = vi.spyOn(logger, 'info');
    let t = 0;
    const gate = createOperatorGate(keys, TTL_MS, logger, () => t);
    await gate.login('hko_good', false);
    db.down = true;
    for (let i = 0; i < 5; i++) {
      t += TTL_MS;
      await gate.authenticate(bearer('hko_good'));
      await gate.authenticate(bearer('hko_never')).catch(() => undefined);
    }
    expect(warn.mock.calls.map(([, msg]) => msg)).toEqual([
      expect.stringMatching(/^operator keys cannot be checked: the database does not answer/),
    ]);
    db.down = false;
    t += TTL_MS;
    await gate.authenticate(bearer('hko_good'));
    await gate.authenticate(bearer('hko_other'));
    expect(info.mock.calls.map(([, msg]) => msg)).toEqual(['operator keys are checked against the database again']);
    db.down = true;
    t += TTL_MS;
    await gate.authenticate(bearer('hko_good'));
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
