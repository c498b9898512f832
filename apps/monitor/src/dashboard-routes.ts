import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@herald/logging';
import { listParked, parkedNameOf, replayParked, type ParkedMessage } from '@herald/messaging';
import type { HttpRoutes } from '@herald/runtime';
import type { History } from './history.ts';
import type { QueueMonitor } from './queue-monitor.ts';
import type { ScheduledCounts } from './scheduled-counts.ts';

export interface DashboardDeps {
  page: string;
  monitor: QueueMonitor;
  history: History;
  scheduled: () => ScheduledCounts;
  /** AMQP URL of the monitored vhost, for listing and replaying parked messages. */
  amqpUrl: string;
  logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const HISTORY_POINTS = 360;
const PARKED_LIST_LIMIT = 100;
const MAX_BODY_BYTES = 16_384;

const sendJson = (res: ServerResponse, status: number, value: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(JSON.stringify(value));
};

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'request body too large');
    chunks.push(chunk as Buffer);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    if (typeof value === 'object' && value !== null) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new HttpError(400, 'body must be a JSON object');
}

const parkedRow = (m: ParkedMessage) => ({
  id: m.messageId ?? null,
  code: m.code ?? null,
  reason: m.reason ?? null,
  parkedAt: m.parkedAt ?? null,
  originalQueue: m.originalQueue,
  attempt: m.attempt,
  preview: m.body.toString('utf8').slice(0, 300),
});

/** Only the parked queues of this vhost's Herald queues: the URL cannot name anything else. */
function parkedQueueOf(deps: DashboardDeps, raw: string): string {
  const parked = parkedNameOf(decodeURIComponent(raw));
  if (!deps.monitor.state().queues.some((q) => q.name === parked)) throw new HttpError(404, `no parked queue ${parked}`);
  return parked;
}

async function replay(deps: DashboardDeps, req: IncomingMessage, rawQueue: string): Promise<unknown> {
  const queue = parkedQueueOf(deps, rawQueue);
  const body = await readJson(req);
  if (typeof body['id'] !== 'string' || body['id'].length === 0) throw new HttpError(400, 'give the parked message id as {"id": "..."}');
  const result = await replayParked({ url: deps.amqpUrl, logger: deps.logger, queue, filter: { kind: 'id', id: body['id'] } });
  deps.logger.info({ queue, messageId: body['id'], ...result }, 'parked message replayed from the dashboard');
  if (result.replayed === 0) throw new HttpError(404, `no parked message ${body['id']} in ${queue}`);
  return result;
}

/**
 * One parked operation at a time: listing holds the messages it reads (unacknowledged) until it
 * finishes, and a replay running meanwhile would not see them.
 */
function serially(): <T>(work: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (work) => {
    const next = tail.then(work, work);
    tail = next.catch(() => undefined);
    return next;
  };
}

async function route(deps: DashboardDeps, req: IncomingMessage, url: URL, parkedLock: ReturnType<typeof serially>): Promise<unknown> {
  const parked = /^\/api\/parked\/([^/]+)(\/replay)?$/.exec(url.pathname);
  if (req.method === 'GET' && url.pathname === '/api/status') return { ...deps.monitor.state(), scheduled: deps.scheduled() };
  if (req.method === 'GET' && url.pathname === '/api/history') {
    const minutes = Math.min(1440, Math.max(1, Number(url.searchParams.get('minutes') ?? 60) || 60));
    return deps.history.series(Date.now(), minutes * 60_000, HISTORY_POINTS);
  }
  if (parked?.[1] !== undefined && parked[2] === undefined && req.method === 'GET') {
    const queue = parkedQueueOf(deps, parked[1]);
    const messages = await parkedLock(() => listParked({ url: deps.amqpUrl, logger: deps.logger, queue, limit: PARKED_LIST_LIMIT }));
    return { queue, messages: messages.map(parkedRow) };
  }
  if (parked?.[1] !== undefined && parked[2] !== undefined && req.method === 'POST') {
    const rawQueue = parked[1];
    return parkedLock(() => replay(deps, req, rawQueue));
  }
  throw new HttpError(404, 'not found');
}

/** GET / (the page), GET /api/status, /api/history, /api/parked/:queue, POST /api/parked/:queue/replay. */
export function dashboardRoutes(deps: DashboardDeps): HttpRoutes {
  const parkedLock = serially();
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://monitor');
    if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(deps.page);
      return true;
    }
    if (!url.pathname.startsWith('/api/')) return false;
    route(deps, req, url, parkedLock).then(
      (value) => sendJson(res, 200, value),
      (err: Error) => {
        const status = err instanceof HttpError ? err.status : 500;
        if (status === 500) deps.logger.error({ err, path: url.pathname }, 'dashboard request failed');
        sendJson(res, status, { error: err.message });
      },
    );
    return true;
  };
}
