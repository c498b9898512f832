import { describe, expect, it } from 'vitest';
import { createHeraldHttpClient } from './herald-http-client.ts';
import { ValidationError } from './validation.ts';

/** A client whose API is never reached: an input its contract refuses throws before anything is sent. */
const client = createHeraldHttpClient({ url: 'http://127.0.0.1:9', apiKey: 'unused' });
const apns = { app: 'chat', platform: 'apns', userId: 'u1', token: 'ab'.repeat(32) } as const;
const keys = { p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM', auth: 'tBHItJI5svbpez7KI4CCXg' };

describe('ValidationError.issues', () => {
  it('names a field in each issue, whole, when a message holds "; " (an APNs registration carrying Web Push keys)', async () => {
    const err = await client.registerDevice({ ...apns, keys }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues).toEqual(['keys: keys belong to a Web Push subscription; an APNs registration has none']);
  });

  it('is one issue per field the contract refuses', async () => {
    const err = await client.registerDevice({ ...apns, keys, applicationServerKey: keys.p256dh }).then(() => undefined, (e: unknown) => e);
    expect((err as ValidationError).issues).toEqual([
      'keys: keys belong to a Web Push subscription; an APNs registration has none',
      'applicationServerKey: applicationServerKey belongs to a Web Push subscription; an APNs registration has none',
    ]);
    expect((err as ValidationError).message).toBe(`invalid registration: ${(err as ValidationError).issues.join('; ')}`);
  });
});
