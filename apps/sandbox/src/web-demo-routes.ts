import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Answer } from './exchange.ts';

/**
 * The Web Push demo page (apps/sandbox/web-demo): a page and a service worker that subscribe to
 * push and list what arrives. Served by the control server because it is plain HTTP on
 * 127.0.0.1, which browsers count as a secure context (service workers need one).
 *
 * Resolved from the repository: this file and the bundle (dist/services/sandbox/main.mjs) both sit
 * three levels below it, so the same relative path works for `tsx` and for `npm start`.
 */
export const WEB_DEMO_DIR = fileURLToPath(new URL('../../../apps/sandbox/web-demo/', import.meta.url));

export const WEB_DEMO_PREFIX = '/web-demo/';

/** The only files served: no path from the URL ever reaches the file system. */
const FILES: ReadonlyMap<string, string> = new Map([
  ['index.html', 'text/html; charset=utf-8'],
  ['app.js', 'text/javascript; charset=utf-8'],
  ['sw.js', 'text/javascript; charset=utf-8'],
]);

const text = (status: number, body: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
  body,
});

/** Answer `GET /web-demo/...`, or undefined when the path is not the demo's. */
export function routeWebDemo(method: string, url: URL, dir: string = WEB_DEMO_DIR): Answer | undefined {
  if (url.pathname === '/web-demo') return text(308, 'moved\n', { location: `${WEB_DEMO_PREFIX}${url.search}` });
  if (!url.pathname.startsWith(WEB_DEMO_PREFIX)) return undefined;
  if (method !== 'GET' && method !== 'HEAD') return text(405, 'the demo page is read-only\n', { allow: 'GET, HEAD' });
  const name = url.pathname.slice(WEB_DEMO_PREFIX.length) || 'index.html';
  // A Map, not an object: `constructor` or `__proto__` must not pass for a file name.
  const type = FILES.get(name);
  if (type === undefined) return text(404, `no demo file ${name}\n`);
  // Read on each request: the files are a few KB, and an edited page shows on reload.
  return { status: 200, headers: { 'content-type': type, 'cache-control': 'no-store' }, body: readFileSync(`${dir}${name}`, 'utf8') };
}
