import type { IncomingMessage } from 'node:http';

/** The header the dashboard's own scripts add to every write; a cross-site form cannot send it. */
export const CSRF_HEADER = 'x-herald-csrf';

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Why a request that changes something (or logs in) must be refused as cross-site, or undefined
 * when it may go on. Three locks, any one of which stops a forged request from another site:
 * - an `Origin` naming another host than the one asked (browsers send it on every POST);
 * - `Sec-Fetch-Site` other than same-origin (or none: typed by a person, or not a browser);
 * - for a session (cookie) request, no `x-herald-csrf` header: a form cannot set one, and a script
 *   on another origin cannot either without a CORS preflight, which this server never grants.
 * A bearer credential is not ambient (a browser never adds it by itself), so it needs no header.
 */
export function crossSiteRefusal(req: IncomingMessage, credential: 'bearer' | 'session' | 'none'): string | undefined {
  const origin = req.headers['origin'];
  if (typeof origin === 'string') {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host === undefined || host !== req.headers['host'])
      return `cross-origin request refused: Origin ${origin} is not this server (${req.headers['host'] ?? 'no Host'})`;
  }
  if (SAFE_METHODS.has(req.method ?? 'GET')) return undefined;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none')
    return `cross-site request refused (Sec-Fetch-Site: ${site})`;
  if (credential !== 'bearer' && req.headers[CSRF_HEADER] !== '1')
    return `a write from the dashboard must carry the ${CSRF_HEADER}: 1 header (or use authorization: Bearer <operator key>)`;
  return undefined;
}
