import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { classify, createWebhookSender, retryAfterMsOf } from './webhook-sender.ts';

describe('classify', () => {
  it('delivers 2xx, retries 5xx/429/408, parks redirects and other 4xx', () => {
    expect(classify(204, '')).toEqual({ kind: 'delivered', status: 204 });
    expect(classify(503, 'down for maintenance')).toMatchObject({ kind: 'transient', reason: 'HTTP 503: down for maintenance' });
    expect(classify(429, '', undefined, '7')).toMatchObject({ kind: 'transient', retryAfterMs: 7000 });
    expect(classify(408, '')).toMatchObject({ kind: 'transient' });
    expect(classify(301, '', 'https://new.example.com/h')).toMatchObject({ kind: 'permanent', reason: 'HTTP 301 redirect to https://new.example.com/h not followed (subscribe the final URL)' });
    expect(classify(410, 'gone')).toMatchObject({ kind: 'permanent', reason: 'HTTP 410: gone' });
  });

  it('reads Retry-After as seconds or a date', () => {
    expect(retryAfterMsOf('2')).toBe(2000);
    expect(retryAfterMsOf(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMsOf('soon')).toBeUndefined();
  });
});

describe('createWebhookSender against a local server', () => {
  let server: Server | undefined;
  const sender = createWebhookSender({ timeoutMs: 300, bodyLimitBytes: 16 });
  afterAll(() => sender.close());
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });
  async function serve(handler: RequestListener): Promise<string> {
    server = createServer(handler);
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/h`;
  }

  it('sends the body and headers and reports a 2xx', async () => {
    let got = '';
    const url = await serve((req, res) => {
      req.on('data', (c: Buffer) => (got += c.toString()));
      req.on('end', () => res.writeHead(200).end(`${String(req.headers['x-test'])}`));
    });
    expect(await sender.post(url, Buffer.from('{"a":1}'), { 'x-test': 'yes' })).toEqual({ kind: 'delivered', status: 200 });
    expect(got).toBe('{"a":1}');
  });

  it('times out a server that never answers', async () => {
    const url = await serve(() => undefined);
    const started = Date.now();
    expect(await sender.post(url, Buffer.from('{}'), {})).toEqual({ kind: 'transient', reason: 'timed out after 300 ms' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('keeps only the start of a long error body for the reason', async () => {
    const url = await serve((_req, res) => res.writeHead(500).end('x'.repeat(100_000)));
    expect(await sender.post(url, Buffer.from('{}'), {})).toEqual({ kind: 'transient', status: 500, reason: `HTTP 500: ${'x'.repeat(16)}` });
  });

  it('reports a refused connection as transient', async () => {
    const url = await serve((_req, res) => res.end());
    server?.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(await sender.post(url, Buffer.from('{}'), {})).toMatchObject({ kind: 'transient', reason: 'connection failed: ECONNREFUSED' });
  });
});
