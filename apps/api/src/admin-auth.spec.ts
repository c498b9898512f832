import { createLogger } from '@herald/logging';
import Fastify from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { ApiError } from './api-error.ts';
import { ADMIN_GUESS_LIMIT, createAdminAuthenticator, createGuessLimit, limitAdminGuesses } from './admin-auth.ts';

const ADMIN_KEY = 'a'.repeat(64);

/** An admin route and a team route behind the guess limit, answering refusals as the API does. */
function adminServer(now: () => number) {
  const logger = createLogger({ service: 'admin-auth-spec', level: 'silent' });
  const warn = vi.spyOn(logger, 'warn');
  const app = Fastify();
  app.setErrorHandler((err, _req, reply) => {
    const known = err instanceof ApiError ? err : new ApiError(500, 'internal', 'internal error');
    void reply.status(known.status).send(known.body());
  });
  limitAdminGuesses(app, logger, createGuessLimit({ now, blocked: (remote) => logger.warn({ remote }, 'blocked') }));
  const authenticate = createAdminAuthenticator({ findOperatorByKey: async () => undefined }, ADMIN_KEY, 0);
  app.get('/admin/apps', async (req) => authenticate(req.headers));
  app.get('/v1/jobs', async () => {
    throw new ApiError(401, 'unauthorized', 'the API key is unknown or revoked');
  });
  const ask = (url: string, key?: string, remoteAddress = '127.0.0.1') =>
    app.inject({ method: 'GET', url, remoteAddress, headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  return { app, ask, warn };
}

// HERALD_ADMIN_KEY could be guessed at any rate from anywhere that reached the API's port.
describe('guessing at the admin routes', () => {
  it('is answered 429 with Retry-After for that address, the right key too, after too many wrong keys within a minute', async () => {
    let t = 0;
    const { app, ask, warn } = adminServer(() => t);
    try {
      for (let i = 0; i < ADMIN_GUESS_LIMIT - 1; i++) expect((await ask('/admin/apps', `guess-${i}`)).statusCode).toBe(401);
      // No key at all is no guess, and a team route's refusals are not counted here.
      for (let i = 0; i < 20; i++) expect((await ask('/admin/apps')).statusCode).toBe(401);
      for (let i = 0; i < 20; i++) expect((await ask('/v1/jobs', 'hk_x')).statusCode).toBe(401);
      expect((await ask('/admin/apps', ADMIN_KEY)).statusCode).toBe(200);
      expect(warn).not.toHaveBeenCalled();

      expect((await ask('/admin/apps', 'guess-last')).statusCode).toBe(401);
      const refused = await ask('/admin/apps', ADMIN_KEY);
      expect([refused.statusCode, refused.headers['retry-after'], refused.json()]).toEqual([
        429,
        '60',
        { error: { code: 'too-many-attempts', message: 'too many failed admin authentications from this address: retry in 60 s' } },
      ]);
      expect(warn.mock.calls).toEqual([[{ remote: '127.0.0.1' }, 'blocked']]);
      // Another address, and the team routes, are not refused.
      expect((await ask('/admin/apps', ADMIN_KEY, '10.0.0.9')).statusCode).toBe(200);
      expect((await ask('/v1/jobs', 'hk_x')).statusCode).toBe(401);

      t += 45_000;
      expect((await ask('/admin/apps', ADMIN_KEY)).headers['retry-after']).toBe('15');
      t += 15_000;
      expect((await ask('/admin/apps', ADMIN_KEY)).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('counts failures within a minute: as many spread over longer are not refused', () => {
    let t = 0;
    const limit = createGuessLimit({ now: () => t });
    for (let i = 0; i < ADMIN_GUESS_LIMIT * 3; i++) {
      limit.failed('192.0.2.1');
      t += 7_000;
    }
    expect(limit.refusedForMs('192.0.2.1')).toBe(0);
    for (let i = 0; i < ADMIN_GUESS_LIMIT; i++) limit.failed('192.0.2.1');
    expect(limit.refusedForMs('192.0.2.1')).toBe(60_000);
  });
});
