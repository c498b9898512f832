import { describe, expect, it } from 'vitest';
import { FcmCredentials } from './app-admin.ts';
import { parseWith } from './parse.ts';

describe("an app's FCM credentials", () => {
  // Google's access tokens last about an hour: a fixed one set for Google failed every push (401 UNAUTHENTICATED, an app ban) an hour later.
  it('takes a fixed access token for the sandbox only (endpoint local, its default), naming endpoint otherwise', () => {
    expect(parseWith(FcmCredentials, { auth: 'access-token', accessToken: 'x', projectId: 'p' })).toEqual({ ok: true, value: { auth: 'access-token', accessToken: 'x', projectId: 'p', endpoint: 'local' } });
    const google = parseWith(FcmCredentials, { auth: 'access-token', accessToken: 'x', projectId: 'p', endpoint: 'google' });
    expect(google.ok ? '' : google.reason).toMatch(/endpoint: an access token expires within about an hour/);
    const account = { auth: 'service-account', serviceAccountJson: JSON.stringify({ client_email: 'a@p.iam.gserviceaccount.com', private_key: 'k' }) };
    expect(parseWith(FcmCredentials, account)).toMatchObject({ ok: true, value: { endpoint: 'google' } });
  });
});
