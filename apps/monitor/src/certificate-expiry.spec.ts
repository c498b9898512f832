import { describe, expect, it } from 'vitest';
import { certificateConditions } from './certificate-expiry.ts';

const DAY = 86_400_000;
const now = Date.parse('2027-03-01T00:00:00Z');
const expiring = (app: string, leftMs: number) => ({ app, expiresAt: new Date(now + leftMs) });

describe("an app's APNs certificate alarms", () => {
  it('says how long is left in days, and in hours on its last day; nothing beyond the warning', () => {
    const found = certificateConditions([expiring('a', 12 * DAY + 3_600_000), expiring('b', 5 * 3_600_000 + 10), expiring('c', 40 * DAY)], now, 30 * DAY);
    expect(found.map((c) => [c.alarm, c.queue, c.value])).toEqual([
      ['apns-certificate-expiring', 'app.a', 12],
      ['apns-certificate-expiring', 'app.b', 0],
    ]);
    expect(found[0]?.summary).toContain('expires on 2027-03-13T01:00:00.000Z, in 12 days:');
    expect(found[1]?.summary).toContain(', in 5 hours:');
  });

  it('raises expired beside expiring once the date has passed, so the outage is said even where the warning was seen', () => {
    const found = certificateConditions([expiring('a', -1)], now, 30 * DAY);
    expect(found.map((c) => c.alarm)).toEqual(['apns-certificate-expiring', 'apns-certificate-expired']);
    expect(found[1]?.summary).toMatch(/^app "a"'s APNs certificate expired on 2027-02-28T23:59:59\.999Z: every APNs push of the app is refused/);
  });
});
