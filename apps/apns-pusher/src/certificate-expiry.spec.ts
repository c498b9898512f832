import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { generate } from 'selfsigned';
import { describe, expect, it, vi } from 'vitest';
import { exportCertificateExpiry } from './certificate-expiry.ts';

const NAME = 'herald_apns_process_certificate_expiry_timestamp_seconds';
const DAY_MS = 86_400_000;
const NOW = Date.parse('2027-01-10T12:00:00Z');

const certificateUntil = async (until: Date): Promise<string> =>
  (
    await generate([{ name: 'commonName', value: 'Apple Push Services: com.example.shop' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate: new Date(NOW - 300 * DAY_MS),
      notAfterDate: until,
    })
  ).cert;

/** The service's registry after a pusher started with `auth`, and the warnings it logged. */
async function started(auth: Parameters<typeof exportCertificateExpiry>[0]): Promise<{ metrics: string; warnings: unknown[] }> {
  const registry = new Registry();
  const logger = createLogger({ service: 'apns-pusher-test', level: 'silent' });
  const warn = vi.spyOn(logger, 'warn');
  exportCertificateExpiry(auth, registry, logger, NOW);
  return { metrics: await registry.metrics(), warnings: warn.mock.calls.map((call) => call[1]) };
}

describe("the apns-pushers' own certificate's expiry", () => {
  it('is exported from start for HeraldApnsProcessCertificateExpiring, in epoch seconds, with a warning when it is 30 days away or less', async () => {
    const until = new Date('2027-02-01T00:00:00Z');
    const soon = await started({
      kind: 'certificate',
      cert: await certificateUntil(until),
      key: 'unused',
      file: '/etc/herald/providers/apns.pem',
    });
    expect(soon.metrics).toContain(`${NAME} ${until.getTime() / 1000}\n`);
    expect(soon.warnings).toEqual([expect.stringContaining('expires (or expired) on 2027-02-01T00:00:00.000Z')]);

    const renewed = new Date('2027-12-01T00:00:00Z');
    const later = await started({
      kind: 'certificate',
      cert: await certificateUntil(renewed),
      key: 'unused',
      file: '/etc/herald/providers/apns.pem',
    });
    expect(later.metrics).toContain(`${NAME} ${renewed.getTime() / 1000}\n`);
    expect(later.warnings).toEqual([]);
  });

  it('is no series at all with token auth (a gauge at 0 would read as expired in 1970)', async () => {
    const token = await started({ kind: 'token', key: 'unused', keyId: 'KEY1234567', teamId: 'TEAM123456' });
    expect(token.metrics).not.toContain(NAME);
    expect(token.warnings).toEqual([]);
  });
});
