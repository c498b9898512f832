import { describe, expect, it } from 'vitest';
import { routeWebDemo } from './web-demo-routes.ts';

const get = (path: string, method = 'GET') => routeWebDemo(method, new URL(path, 'http://127.0.0.1:4480'));

describe('the Web Push demo routes', () => {
  it('serves the page, its script and the service worker from the repository, uncached', () => {
    const page = get('/web-demo/');
    expect(page).toMatchObject({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } });
    expect(page?.body).toContain('<script src="app.js"></script>');
    expect(get('/web-demo/app.js')).toMatchObject({ status: 200, headers: { 'content-type': 'text/javascript; charset=utf-8' } });
    const worker = get('/web-demo/sw.js');
    expect(worker?.body).toContain("addEventListener('push'");
    expect(worker?.body).toContain("addEventListener('notificationclick'");
  });

  it('redirects /web-demo to the page, keeping the query (relative script URLs need the slash)', () => {
    expect(get('/web-demo?vapidKey=B1')).toMatchObject({ status: 308, headers: { location: '/web-demo/?vapidKey=B1' } });
  });

  it('serves only its own files and only for reading; other paths are not its business', () => {
    expect(get('/web-demo/..%2Fsrc%2Fconfig.ts')?.status).toBe(404);
    expect(get('/web-demo/README.md')?.status).toBe(404);
    for (const inherited of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) expect(get(`/web-demo/${inherited}`)?.status).toBe(404);
    expect(get('/web-demo/sw.js', 'POST')).toMatchObject({ status: 405, headers: { allow: 'GET, HEAD' } });
    expect(get('/records')).toBeUndefined();
  });
});
