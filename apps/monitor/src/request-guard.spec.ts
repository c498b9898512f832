import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { crossSiteRefusal } from './request-guard.ts';

const req = (method: string, headers: Record<string, string>): IncomingMessage =>
  ({ method, headers: { host: '127.0.0.1:9470', ...headers } }) as unknown as IncomingMessage;

describe('CSRF guard for the dashboard', () => {
  it("lets the dashboard's own session writes and bearer writes through", () => {
    expect(
      crossSiteRefusal(
        req('POST', { origin: 'http://127.0.0.1:9470', 'sec-fetch-site': 'same-origin', 'x-herald-csrf': '1' }),
        'session',
      ),
    ).toBeUndefined();
    expect(crossSiteRefusal(req('POST', {}), 'bearer')).toBeUndefined();
    expect(crossSiteRefusal(req('GET', {}), 'session')).toBeUndefined();
  });

  it('refuses a session write without the custom header (what a cross-site form sends)', () => {
    expect(crossSiteRefusal(req('POST', { origin: 'http://127.0.0.1:9470' }), 'session')).toMatch(/x-herald-csrf: 1/);
    expect(crossSiteRefusal(req('POST', { 'x-herald-csrf': 'yes' }), 'none')).toMatch(/x-herald-csrf/);
  });

  it('refuses another origin, a null origin, and cross-site fetch metadata, whatever the credential', () => {
    for (const credential of ['session', 'bearer', 'none'] as const) {
      expect(crossSiteRefusal(req('POST', { origin: 'http://evil.example', 'x-herald-csrf': '1' }), credential)).toMatch(
        /cross-origin/,
      );
      expect(crossSiteRefusal(req('POST', { origin: 'null', 'x-herald-csrf': '1' }), credential)).toMatch(/cross-origin/);
      expect(crossSiteRefusal(req('POST', { origin: 'http://127.0.0.1:9471', 'x-herald-csrf': '1' }), credential)).toMatch(
        /cross-origin/,
      );
      expect(crossSiteRefusal(req('POST', { 'sec-fetch-site': 'cross-site', 'x-herald-csrf': '1' }), credential)).toMatch(
        /cross-site/,
      );
    }
    expect(crossSiteRefusal(req('GET', { origin: 'http://evil.example' }), 'session')).toMatch(/cross-origin/);
  });
});
