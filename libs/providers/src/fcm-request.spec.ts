import { describe, expect, it } from 'vitest';
import { AccessTokens } from './fcm-request.ts';

/** A credential that counts its fetches and answers each with the next token after `gate` opens. */
function countingCredential(expiresIn: number) {
  let fetches = 0;
  let open: () => void = () => undefined;
  let gate = new Promise<void>((r) => (open = r));
  return {
    get fetches() {
      return fetches;
    },
    release() {
      open();
      gate = new Promise<void>((r) => (open = r));
    },
    credential: {
      getAccessToken: async () => {
        fetches += 1;
        const n = fetches;
        await gate;
        return { access_token: `token-${n}`, expires_in: expiresIn };
      },
    },
  };
}

describe('AccessTokens: the credential is asked once per token lifetime', () => {
  it('shares one fetch among the sends waiting for it, then answers from the cache', async () => {
    const c = countingCredential(3600);
    const tokens = new AccessTokens(c.credential);
    const waiting = [tokens.get(), tokens.get(), tokens.get()];
    c.release();
    expect(await Promise.all(waiting)).toEqual(['token-1', 'token-1', 'token-1']);
    expect(tokens.get()).toBe('token-1');
    expect(c.fetches).toBe(1);
  });

  it('fetches a new token five minutes before the old one expires', async () => {
    const c = countingCredential(3600);
    const tokens = new AccessTokens(c.credential);
    const first = tokens.get();
    c.release();
    await first;
    expect(tokens.get(Date.now() + 54 * 60_000)).toBe('token-1');
    const renewed = tokens.get(Date.now() + 56 * 60_000);
    c.release();
    expect(await renewed).toBe('token-2');
    expect(c.fetches).toBe(2);
  });

  it('asks again after a failed fetch instead of keeping the failure', async () => {
    let calls = 0;
    const tokens = new AccessTokens({
      getAccessToken: () => (++calls === 1 ? Promise.reject(new Error('token server down')) : Promise.resolve({ access_token: 'ok', expires_in: 3600 })),
    });
    await expect(tokens.get()).rejects.toThrow('token server down');
    expect(await tokens.get()).toBe('ok');
  });
});
