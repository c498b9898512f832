import { describe, expect, it, vi } from 'vitest';
import { ApnsCredentials, FcmCredentials } from './app-admin.ts';
import { apnsCertificateProblem } from './provider-connection.ts';
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

/** A certificate valid from 2026-12-06T00:25:15Z to 2027-12-06T00:25:15Z. */
const CERT_2026_12_06_TO_2027_12_06 = [
  '-----BEGIN CERTIFICATE-----',
  'MIICTDCCAbWgAwIBAgIJU88mFGON1KvCMA0GCSqGSIb3DQEBBQUAMC8xLTArBgNV',
  'BAMTJEFwcGxlIFB1c2ggU2VydmljZXM6IGNvbS5leGFtcGxlLmFwcDAeFw0yNjEy',
  'MDYwMDI1MTVaFw0yNzEyMDYwMDI1MTVaMC8xLTArBgNVBAMTJEFwcGxlIFB1c2gg',
  'U2VydmljZXM6IGNvbS5leGFtcGxlLmFwcDCBnzANBgkqhkiG9w0BAQEFAAOBjQAw',
  'gYkCgYEAtlFSCychf4aWakjf/tbOIIQX5wd7FGwevNOiQj7HKWG5/W+hSMp5Dquf',
  'Jtm2X8TyrppEXjt+wVkCXYTUC3nfYgKxdHnjKp1FtWkFSFQq9e7UPdU1sRHm6CwA',
  '6wzn4iA78P7k0DoFOeYJH7C6gYfyicc1zEqyRTCGyU5sHmai1OkCAwEAAaNwMG4w',
  'DAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMCBaAwHQYDVR0lBBYwFAYIKwYBBQUH',
  'AwEGCCsGAQUFBwMCMC8GA1UdEQQoMCaCJEFwcGxlIFB1c2ggU2VydmljZXM6IGNv',
  'bS5leGFtcGxlLmFwcDANBgkqhkiG9w0BAQUFAAOBgQCA7dWg/zg15SOEeI5IXnqw',
  'e2O+0/aHVMBh6YzYTcq0t1gC5Rb/Ue3pdPc94zkhPCCrILsrMzONHACn93vDrNvt',
  'TJ8Ws98ANcGjxj6XCbBNXXUKA/1ENSb64rx8zjvMBcNEcFbu2eRSKnOEuDzC65+Q',
  'tZSn0F4H2Pq6UFJ1bEY0FQ==',
  '-----END CERTIFICATE-----',
].join('\n');

describe("an app's APNs certificate", () => {
  it('is refused expired or not yet valid, naming when; Apple refuses it in the handshake, which a pusher sees only as a closed connection', () => {
    expect(apnsCertificateProblem(CERT_2026_12_06_TO_2027_12_06, Date.parse('2027-06-01T00:00:00Z'))).toBeUndefined();
    expect(apnsCertificateProblem(CERT_2026_12_06_TO_2027_12_06, Date.parse('2027-12-06T00:25:15Z'))).toMatch(/^expired on 2027-12-06T00:25:15\.000Z: APNs refuses it; renew it/);
    expect(apnsCertificateProblem(CERT_2026_12_06_TO_2027_12_06, Date.parse('2026-12-01T00:00:00Z'))).toBe('is not valid until 2026-12-06T00:25:15.000Z');
    expect(apnsCertificateProblem('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----')).toMatch(/must hold a PEM certificate/);
    expect(apnsCertificateProblem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toMatch(/is not a valid X\.509 certificate/);
  });

  it('is checked at the doors (admin API and CLI), naming certPem', () => {
    const given = { auth: 'certificate', certPem: CERT_2026_12_06_TO_2027_12_06, keyPem: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' };
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date('2027-06-01T00:00:00Z'));
      expect(parseWith(ApnsCredentials, given)).toMatchObject({ ok: true });
      vi.setSystemTime(new Date('2028-01-01T00:00:00Z'));
      const expired = parseWith(ApnsCredentials, given);
      expect(expired.ok ? '' : expired.reason).toMatch(/certPem: expired on 2027-12-06T00:25:15\.000Z/);
    } finally {
      vi.useRealTimers();
    }
  });
});
