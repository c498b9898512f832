import { describe, expect, it } from 'vitest';
import { classifyFcmError } from './fcm-classify.ts';
import { FcmTimeoutError } from './fcm-sessions.ts';
import { AccessTokens, FcmCredentialRefused, failureOf } from './fcm-request.ts';

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

describe('AccessTokens: a token FCM refused, a token server that refuses or hangs', () => {
  /** Credentials made one after another, the n-th answering `token-n` (or what `answer` says). */
  function credentials(answer: (n: number) => Promise<{ access_token: string; expires_in: number }> = (n) => Promise.resolve({ access_token: `token-${n}`, expires_in: 3600 })) {
    let made = 0;
    return {
      get made() {
        return made;
      },
      make: () => {
        made += 1;
        const n = made;
        return { getAccessToken: () => answer(n) };
      },
    };
  }

  it("drops a refused token and fetches the next through a new credential (the old one's library keeps its own copy); the one fetched after a refusal, refused too, is final", async () => {
    const c = credentials();
    const tokens = new AccessTokens(c.make(), c.make);
    expect(await tokens.get()).toBe('token-1');
    expect(tokens.refused('token-1')).toBe('retry');
    // Sends in flight with the same token answered 401 too: retried, no second renewal.
    expect(tokens.refused('token-1')).toBe('retry');
    expect(c.made).toBe(2);
    expect(await tokens.get()).toBe('token-2');
    expect(tokens.refused('token-2')).toBe('final');
    expect(tokens.refused('token-2')).toBe('final');
    expect(tokens.get()).toBe('token-2');
  });

  it('a token fetched after a refusal that FCM then took is trusted again: a later 401 is retried, not final', async () => {
    const c = credentials();
    const tokens = new AccessTokens(c.make(), c.make);
    expect(await tokens.get()).toBe('token-1');
    tokens.refused('token-1');
    expect(await tokens.get()).toBe('token-2');
    tokens.accepted('token-2');
    expect(tokens.refused('token-2')).toBe('retry');
    expect(await tokens.get()).toBe('token-3');
  });

  it('a refusal while a fetch is under way gives that fetch up: its late answer overwrites nothing, the next comes from a new credential', async () => {
    let late: (v: { access_token: string; expires_in: number }) => void = () => undefined;
    let fetches = 0;
    const answer = () => (++fetches === 2 ? new Promise<{ access_token: string; expires_in: number }>((r) => (late = r)) : Promise.resolve({ access_token: `token-${fetches}`, expires_in: 3600 }));
    let made = 0;
    const make = () => (made++, { getAccessToken: answer });
    const tokens = new AccessTokens(make(), make);
    expect(await tokens.get()).toBe('token-1');
    // A refresh (five minutes before expiry) is under way when FCM refuses token-1.
    const refreshing = tokens.get(Date.now() + 56 * 60_000);
    expect(tokens.refused('token-1')).toBe('retry');
    expect(made).toBe(2);
    expect(await tokens.get()).toBe('token-3');
    late({ access_token: 'token-1', expires_in: 3600 });
    expect(await refreshing).toBe('token-1');
    expect(tokens.get()).toBe('token-3');
    // The refused token coming back late was not taken as the one fetched after the refusal.
    expect(tokens.refused('token-3')).toBe('final');
  });

  it('a credential that gives the same token again (a fixed access token): refused twice, final', async () => {
    const fixed = { getAccessToken: () => Promise.resolve({ access_token: 'ya29.fixed', expires_in: 3600 }) };
    const tokens = new AccessTokens(fixed, () => fixed);
    expect(await tokens.get()).toBe('ya29.fixed');
    expect(tokens.refused('ya29.fixed')).toBe('retry');
    expect(await tokens.get()).toBe('ya29.fixed');
    expect(tokens.refused('ya29.fixed')).toBe('final');
  });

  it("names the token server's refusal of the service account (an OAuth error answer: invalid_grant) and leaves a network failure as it is", async () => {
    const refusal = Object.assign(new Error('invalid_grant: Invalid JWT Signature.'), { response: { status: 400, data: { error: 'invalid_grant' } } });
    const refusing = new AccessTokens({ getAccessToken: () => Promise.reject(refusal) });
    const err = await Promise.resolve(refusing.get()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FcmCredentialRefused);
    expect((err as Error).message).toMatch(/refused the service account \(HTTP 400\): invalid_grant: Invalid JWT Signature/);
    const down = new AccessTokens({ getAccessToken: () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND oauth2.googleapis.com'), { code: 'ENOTFOUND' })) });
    const netErr = await Promise.resolve(down.get()).catch((e: unknown) => e);
    expect(netErr).not.toBeInstanceOf(FcmCredentialRefused);
    expect((netErr as Error).message).toMatch(/ENOTFOUND/);
  });

  it('gives up a fetch that hangs past the deadline and asks a new credential next time', async () => {
    const c = credentials((n) => (n === 1 ? new Promise(() => undefined) : Promise.resolve({ access_token: `token-${n}`, expires_in: 3600 })));
    const tokens = new AccessTokens(c.make(), c.make);
    const started = Date.now();
    await expect(tokens.get(Date.now(), 50)).rejects.toBeInstanceOf(FcmTimeoutError);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(c.made).toBe(2);
    expect(await tokens.get(Date.now(), 50)).toBe('token-2');
  });

  it('a fetch given up at its deadline that answers later overwrites nothing', async () => {
    let late: (v: { access_token: string; expires_in: number }) => void = () => undefined;
    const c = credentials((n) => (n === 1 ? new Promise((r) => (late = r)) : Promise.resolve({ access_token: `token-${n}`, expires_in: 3600 })));
    const tokens = new AccessTokens(c.make(), c.make);
    await expect(tokens.get(Date.now(), 20)).rejects.toBeInstanceOf(FcmTimeoutError);
    expect(await tokens.get(Date.now(), 50)).toBe('token-2');
    late({ access_token: 'token-1', expires_in: 3600 });
    await new Promise((r) => setImmediate(r));
    expect(tokens.get()).toBe('token-2');
  });
});

describe("failureOf: Google's INVALID_ARGUMENT, a bad token or a bad message by its detail", () => {
  const json = { 'content-type': 'application/json; charset=UTF-8' };
  const answer = (message: string, detail: object): string => JSON.stringify({ error: { code: 400, message, status: 'INVALID_ARGUMENT', details: [detail] } });
  const badRequest = (field: string, description: string) => ({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description }] });

  it("the ErrorCode page's first example (a BadRequest naming message.data[0].value) is the message's fault: permanent", () => {
    const words = "Invalid value at 'message.data[0].value' (TYPE_STRING), 12";
    const failure = failureOf(400, json, answer(words, badRequest('message.data[0].value', words)));
    expect(failure).toEqual({ code: 'INVALID_ARGUMENT', message: words, badRequestFields: ['message.data[0].value'], httpStatus: 400 });
    expect(classifyFcmError(failure)).toMatchObject({ kind: 'permanent' });
  });

  it("the page's second example (FcmError, no BadRequest) is the token's: dead", () => {
    const words = 'The registration token is not a valid FCM registration token';
    const failure = failureOf(400, json, answer(words, { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' }));
    expect(failure).toEqual({ code: 'INVALID_ARGUMENT', message: words, httpStatus: 400 });
    expect(classifyFcmError(failure)).toMatchObject({ kind: 'dead-token' });
  });

  it('a BadRequest decides over the words: one naming another field is permanent even when its words speak of the registration token; one naming message.token is dead', () => {
    const words = 'Invalid package name: the registration token was issued to another package';
    expect(classifyFcmError(failureOf(400, json, answer(words, badRequest('message.android.restricted_package_name', words))))).toMatchObject({ kind: 'permanent' });
    expect(classifyFcmError(failureOf(400, json, answer("Invalid value at 'message.token'", badRequest('message.token', "Invalid value at 'message.token'"))))).toMatchObject({
      kind: 'dead-token',
    });
  });

  it('a BadRequest naming no field tells nothing: the words decide', () => {
    const words = 'The registration token is not a valid FCM registration token';
    const failure = failureOf(400, json, answer(words, { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ description: words }] }));
    expect(failure.badRequestFields).toBeUndefined();
    expect(classifyFcmError(failure)).toMatchObject({ kind: 'dead-token' });
  });

  it("an iOS device's answer through FCM (its ApnsError detail) is decided by APNs' reason, not by the BadRequest naming message.token: BadDeviceToken keeps the token and parks the push; Unregistered is dead", () => {
    const body = JSON.stringify({
      error: {
        code: 400,
        message: 'Request contains an invalid argument.',
        status: 'INVALID_ARGUMENT',
        details: [
          { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' },
          { '@type': 'type.googleapis.com/google.firebase.fcm.v1.ApnsError', statusCode: 400, reason: 'BadDeviceToken' },
          badRequest('message.token', 'Invalid registration token'),
        ],
      },
    });
    const failure = failureOf(400, json, body);
    expect(failure.apnsReason).toBe('BadDeviceToken');
    expect(classifyFcmError(failure)).toEqual({ kind: 'permanent', reason: 'INVALID_ARGUMENT: Request contains an invalid argument.: APNs BadDeviceToken' });
    expect(classifyFcmError({ ...failure, apnsReason: 'TopicDisallowed' })).toMatchObject({ kind: 'permanent' });
    expect(classifyFcmError({ ...failure, apnsReason: 'Unregistered' })).toMatchObject({ kind: 'dead-token' });
  });
});
