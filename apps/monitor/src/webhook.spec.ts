import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { createWebhook, type PostOutcome, type WebhookPayload } from './webhook.ts';

const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
const payload = (queue: string): WebhookPayload => ({
  text: `[FIRING] ${queue}`,
  alarm: 'backlog',
  queue,
  state: 'firing',
  summary: queue,
  value: 1,
  threshold: 0,
  since: '',
  firedAt: '',
  at: '',
  vhost: 'v',
});

/** A chat endpoint answering as `respond` says; what it received, in order. */
async function endpoint(respond: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  const received: Array<{ queue: string; at: number }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ queue: (JSON.parse(body) as WebhookPayload).queue, at: Date.now() });
      respond(req, res, received.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('the alarm webhook', () => {
  it("sends a user and password in its URL as Basic authorization (fetch refuses such a URL, and every alarm was lost)", async () => {
    const expected = `Basic ${Buffer.from('alerts:S3cret/x').toString('base64')}`;
    const chat = await endpoint((req, res) => res.writeHead(req.headers.authorization === expected ? 200 : 401).end());
    let failures = 0;
    const webhook = createWebhook(chat.url.replace('http://', 'http://alerts:S3cret%2Fx@'), logger, () => void failures++, { attemptDelaysMs: [0] });
    let outcome: PostOutcome | undefined;
    try {
      webhook.post(payload('push.jobs'), (o) => (outcome = o));
      await webhook.drain();
      expect(outcome).toBe('delivered');
      expect(failures).toBe(0);
    } finally {
      await chat.close();
    }
  });

  it("waits a 429's Retry-After before trying again, then delivers", async () => {
    const chat = await endpoint((_, res, n) => (n === 1 ? res.writeHead(429, { 'retry-after': '1' }).end() : res.writeHead(200).end()));
    let failures = 0;
    const webhook = createWebhook(chat.url, logger, () => void failures++, { attemptDelaysMs: [0, 10, 10] });
    let outcome: PostOutcome | undefined;
    try {
      webhook.post(payload('push.jobs'), (o) => (outcome = o));
      await webhook.drain();
      expect(outcome).toBe('delivered');
      expect(chat.received.map((r) => r.queue)).toEqual(['push.jobs', 'push.jobs']);
      expect((chat.received[1]?.at ?? 0) - (chat.received[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
      expect(failures).toBe(0);
    } finally {
      await chat.close();
    }
  });

  it('at shutdown, drains within its bound: what is still waiting then is given up and counted, not left to hold the stop', async () => {
    // Slower than the bound, and failing: the post under way is stopped, so it is not counted again when it would fail.
    const chat = await endpoint((_, res) => setTimeout(() => res.writeHead(500).end(), 1_000));
    let failures = 0;
    const webhook = createWebhook(chat.url, logger, () => void failures++, { attemptDelaysMs: [0] });
    const ended: string[] = [];
    try {
      for (const q of ['q1', 'q2', 'q3']) webhook.post(payload(q), (outcome) => ended.push(`${q} ${outcome}`));
      const started = Date.now();
      await webhook.drain(200);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(failures).toBe(3); // q1 under way, q2 and q3 waiting
      await new Promise((r) => setTimeout(r, 1_500));
      expect(failures).toBe(3);
      // Each told it was abandoned (the monitor leaves it for the next announcer to say).
      expect(ended.sort()).toEqual(['q1 abandoned', 'q2 abandoned', 'q3 abandoned']);
      expect(chat.received.map((r) => r.queue)).toEqual(['q1']);
    } finally {
      await chat.close();
    }
  });

  it('keeps at most maxPending alarms waiting behind a failing endpoint, dropping the oldest, and posts the newest', async () => {
    const chat = await endpoint((_, res) => res.writeHead(500).end());
    let failures = 0;
    const webhook = createWebhook(chat.url, logger, () => void failures++, { attemptDelaysMs: [0], maxPending: 2 });
    const ended: string[] = [];
    try {
      for (const q of ['q1', 'q2', 'q3', 'q4', 'q5']) webhook.post(payload(q), (outcome: PostOutcome) => ended.push(`${q} ${outcome}`));
      await webhook.drain();
      // q1 was on its way; q2 and q3 were dropped for q4 and q5.
      expect(chat.received.map((r) => r.queue)).toEqual(['q1', 'q4', 'q5']);
      expect(failures).toBe(5); // two dropped, three refused
      expect(ended).toEqual(['q2 failed', 'q3 failed', 'q1 failed', 'q4 failed', 'q5 failed']);
    } finally {
      await chat.close();
    }
  });
});
