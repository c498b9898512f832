import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createOperatorGate } from './operator-gate.ts';

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

describe('operator gate', () => {
  const live = new Set(['hko_good']);
  const keys = { findOperatorByKey: async (key: string) => (live.has(key) ? { id: 'op1', name: 'ann' } : undefined) };

  it('knows an operator by bearer key or by a session opened with one, and nobody else', async () => {
    let t = 0;
    const gate = createOperatorGate(keys, 0, () => t);
    expect(await gate.authenticate(req({}))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: 'Bearer hko_bad' }))).toBeUndefined();
    expect(await gate.authenticate(req({ authorization: 'Bearer hko_good' }))).toEqual({ id: 'op1', name: 'ann', via: 'bearer' });
    expect(await gate.login('hko_bad', false)).toBeUndefined();
    const opened = await gate.login('hko_good', true);
    expect(opened?.cookie).toMatch(
      /^herald_operator_session=[\w-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200; Secure$/,
    );
    const cookie = (opened?.cookie ?? '').split(';')[0] ?? '';
    expect(await gate.authenticate(req({ cookie: `other=1; ${cookie}` }))).toEqual({ id: 'op1', name: 'ann', via: 'session' });
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
    const gate = createOperatorGate(keys, 0);
    const cookie = ((await gate.login('hko_good', false))?.cookie ?? '').split(';')[0] ?? '';
    expect(gate.logout(req({ cookie }))).toMatch(/Max-Age=0/);
    expect(await gate.authenticate(req({ cookie }))).toBeUndefined();
  });
});
