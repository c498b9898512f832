import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@herald/testing';

export interface ReceivedPost {
  receivedAt: number;
  body: Record<string, unknown>;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly posts: ReceivedPost[];
  /** The first post received at or after `since` whose body has every field of `match`. */
  waitFor(match: Record<string, unknown>, since: number, timeoutMs?: number): Promise<ReceivedPost>;
  close(): Promise<void>;
}

/** A chat tool's incoming-webhook stand-in: records every JSON POST with when it arrived. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const posts: ReceivedPost[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ receivedAt: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/herald`;
  const matches = (p: ReceivedPost, match: Record<string, unknown>): boolean => Object.entries(match).every(([k, v]) => p.body[k] === v);
  return {
    url,
    posts,
    waitFor: (match, since, timeoutMs = 30_000) =>
      waitFor(`webhook ${JSON.stringify(match)}`, () => posts.find((p) => p.receivedAt >= since && matches(p, match)), { timeoutMs, intervalMs: 50 }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
