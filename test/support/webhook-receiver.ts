import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@herald/testing';

export interface ReceivedPost {
  receivedAt: number;
  body: Record<string, unknown>;
  /** The bytes as they arrived (what a signature is computed over). */
  rawBody: Buffer;
  headers: IncomingHttpHeaders;
  path: string;
}

/**
 * How to answer the n-th post (0-based); the default answers 200 {"ok":true}. A responder that
 * never ends the response makes the receiver hang (close() still returns).
 */
export type Responder = (post: ReceivedPost, res: ServerResponse, n: number) => void;

export interface WebhookReceiver {
  readonly url: string;
  readonly posts: ReceivedPost[];
  /** The first post received at or after `since` whose body has every field of `match`. */
  waitFor(match: Record<string, unknown>, since: number, timeoutMs?: number): Promise<ReceivedPost>;
  close(): Promise<void>;
}

const ok: Responder = (_post, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');

/** A local HTTP receiver (a chat tool's incoming webhook, a webhook subscriber): records every JSON POST with when it arrived. */
export async function startWebhookReceiver(options: { respond?: Responder } = {}): Promise<WebhookReceiver> {
  const posts: ReceivedPost[] = [];
  const respond = options.respond ?? ok;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>;
      } catch {
        // kept as rawBody only
      }
      const post = { receivedAt: Date.now(), body, rawBody, headers: req.headers, path: req.url ?? '' };
      posts.push(post);
      respond(post, res, posts.length - 1);
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
