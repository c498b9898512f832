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
  const sender = createWebhookSender({ timeoutMs: 300, bodyLimitBytes: 16, allowLoopback: true });
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

  it('reaches the loopback by name too when allowed (WEBHOOK_ALLOW_HTTP_LOCALHOST)', async () => {
    const url = await serve((_req, res) => res.writeHead(204).end());
    expect(await sender.post(url.replace('127.0.0.1', 'localhost'), Buffer.from('{}'), {})).toEqual({ kind: 'delivered', status: 204 });
  });

  it('refuses, without connecting, a callback whose host is or resolves to an internal address (parked, not retried)', async () => {
    let hits = 0;
    const url = await serve((_req, res) => {
      hits++;
      res.writeHead(204).end();
    });
    const guarded = createWebhookSender({ timeoutMs: 300, bodyLimitBytes: 16 });
    try {
      // By name: localhost resolves to the loopback, as an internal service's name resolves inside.
      expect(await guarded.post(url.replace('127.0.0.1', 'localhost'), Buffer.from('{}'), {})).toEqual({
        kind: 'permanent',
        reason: "refused: the callback's host localhost resolves to a loopback address (this machine), which webhooks must not reach (subscribe a public https URL)",
      });
      // A literal address is never looked up: asked all the same.
      expect(await guarded.post(url, Buffer.from('{}'), {})).toMatchObject({ kind: 'permanent', reason: expect.stringContaining('host 127.0.0.1 is a loopback address') });
      expect(await guarded.post('https://10.0.0.5/h', Buffer.from('{}'), {})).toMatchObject({ kind: 'permanent', reason: expect.stringContaining('host 10.0.0.5 is a private, link-local or reserved address') });
      expect(hits).toBe(0);
    } finally {
      guarded.close();
    }
  });

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
