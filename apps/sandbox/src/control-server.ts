import http from 'node:http';
import { routeDevices } from './device-control.ts';
import { json, type Answer, type SandboxContext } from './exchange.ts';
import { parseFaultSpec } from './faults.ts';
import { readBody } from './read-body.ts';
import { routeWeb } from './web-control.ts';
import { RECORD_FIELDS, type RecordField, type RecordQuery, type RecordStore } from './record-store.ts';
import { routeWebDemo } from './web-demo-routes.ts';

const intParam = (v: string | null): number | undefined => (v !== null && /^\d+$/.test(v) ? Number(v) : undefined);

/** `GET /records?fields=a,b`: the named fields, or the reason they cannot be given (undefined: every field). */
function recordFields(params: URLSearchParams): RecordField[] | { error: string } | undefined {
  const fields = params.get('fields');
  if (fields === null) return undefined;
  const names = fields.split(',').filter((f) => f !== '');
  const unknown = names.find((f) => !(RECORD_FIELDS as readonly string[]).includes(f));
  return unknown === undefined ? (names as RecordField[]) : { error: `fields: no record field "${unknown}" (one of ${RECORD_FIELDS.join(', ')})` };
}

function recordQuery(params: URLSearchParams): RecordQuery {
  const q: RecordQuery = {};
  const platform = params.get('platform');
  const token = params.get('token');
  const limit = intParam(params.get('limit'));
  const after = intParam(params.get('after'));
  if (platform !== null && platform !== '') q.platform = platform;
  if (token !== null && token !== '') q.token = token;
  if (limit !== undefined) q.limit = limit;
  if (after !== undefined) q.afterSeq = after;
  return q;
}

/** The longest `GET /stats/wait` holds a request (`timeoutMs`), and what it holds when none is given. */
const WAIT_MAX_MS = 300_000;
const WAIT_DEFAULT_MS = 30_000;

/**
 * `GET /stats/wait?atLeast=N&status=&timeoutMs=`: answers `{ count, reached }` once N requests (of
 * `status`, every platform together, if given) have been counted, or after `timeoutMs` with the
 * count then. A bench or test waiting for its pushes makes one request instead of polling `/stats`.
 */
export async function waitForCount(params: URLSearchParams, records: RecordStore): Promise<Answer> {
  const atLeast = intParam(params.get('atLeast'));
  if (atLeast === undefined) return json(400, { error: 'atLeast: a whole number of requests is required' });
  const timeoutMs = params.has('timeoutMs') ? intParam(params.get('timeoutMs')) : WAIT_DEFAULT_MS;
  if (timeoutMs === undefined || timeoutMs > WAIT_MAX_MS) return json(400, { error: `timeoutMs: a whole number of milliseconds up to ${WAIT_MAX_MS}` });
  const status = params.has('status') ? intParam(params.get('status')) : undefined;
  if (params.has('status') && (status === undefined || status < 100 || status > 599)) return json(400, { error: 'status: an HTTP status code (100-599)' });
  const count = await records.counted(atLeast, timeoutMs, status);
  return json(200, { count, reached: count >= atLeast });
}

/**
 * `GET /stats/stream?everyMs=`: one response that stays open and carries a JSON line `{ total,
 * byStatus }` (every platform together) each `everyMs` (default 50) in which the counts changed,
 * and one at once. For a poller that wants the count that often (the bench's backlog gate): a
 * line costs both sides a small write and read, where a `GET /stats` costs each a request.
 */
function streamCounts(params: URLSearchParams, records: RecordStore, res: http.ServerResponse): void {
  const everyMs = params.has('everyMs') ? intParam(params.get('everyMs')) : 50;
  if (everyMs === undefined || everyMs < 10 || everyMs > 10_000) {
    const answer = json(400, { error: 'everyMs: a whole number of milliseconds from 10 to 10000' });
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  let sent = '';
  const send = (): void => {
    const line = JSON.stringify(records.counts());
    if (line !== sent) res.write(`${line}\n`);
    sent = line;
  };
  send();
  const timer = setInterval(send, everyMs);
  res.once('close', () => clearInterval(timer));
}

function addFault(body: Buffer, ctx: SandboxContext): Answer {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return json(400, { error: 'body must be JSON' });
  }
  const parsed = parseFaultSpec(value);
  if (!parsed.ok) return json(400, { error: parsed.reason });
  const fault = ctx.faults.add(parsed.spec);
  ctx.logger.info({ fault }, 'fault injected');
  return json(201, { id: fault.id });
}

/** Mint an APNs signing key (`{platform:'apns', teamId?}`) or an FCM project (`{platform:'fcm', projectId?}`). */
function mintCredentials(body: Buffer, ctx: SandboxContext): Answer {
  let value: { platform?: unknown; teamId?: unknown; projectId?: unknown };
  try {
    value = JSON.parse(body.toString('utf8')) as typeof value;
  } catch {
    return json(400, { error: 'body must be JSON' });
  }
  if (ctx.credentials === undefined) return json(404, { error: 'this sandbox does not mint credentials' });
  const text = (v: unknown): string | undefined => (typeof v === 'string' && /^[A-Za-z0-9-]{1,64}$/.test(v) ? v : undefined);
  if (value.platform === 'apns') return json(201, ctx.credentials.mintApnsKey(text(value.teamId)));
  if (value.platform === 'fcm') return json(201, ctx.credentials.mintFcmProject(text(value.projectId)));
  return json(400, { error: 'platform must be "apns" or "fcm"' });
}

/** Route one control request. */
export function routeControl(method: string, url: URL, body: Buffer, ctx: SandboxContext): Answer {
  const route = `${method} ${url.pathname}`;
  if (url.pathname.startsWith('/devices')) return routeDevices(method, url, body, ctx) ?? json(404, { error: `no route ${route}` });
  if (url.pathname.startsWith('/web/')) return routeWeb(method, url, body, ctx) ?? json(404, { error: `no route ${route}` });
  if (url.pathname.startsWith('/web-demo')) return routeWebDemo(method, url) ?? json(404, { error: `no route ${route}` });
  switch (route) {
    case 'GET /healthz':
      return json(200, { ok: true });
    case 'GET /records': {
      const q = recordQuery(url.searchParams);
      const fields = recordFields(url.searchParams);
      if (fields === undefined) return json(200, ctx.records.query(q));
      return 'error' in fields ? json(400, fields) : json(200, ctx.records.queryFields(q, fields));
    }
    case 'DELETE /records':
      ctx.records.clear();
      return json(200, { cleared: true });
    case 'GET /stats':
      return json(200, ctx.records.getStats());
    case 'GET /pauses':
      return ctx.pauses === undefined ? json(404, { error: 'this sandbox does not record its pauses' }) : json(200, ctx.pauses.list());
    case 'GET /faults':
      return json(200, ctx.faults.list());
    case 'POST /faults':
      return addFault(body, ctx);
    case 'POST /credentials':
      return mintCredentials(body, ctx);
    case 'DELETE /faults':
      ctx.faults.clear();
      return json(200, { cleared: true });
    default:
      return json(404, { error: `no route ${route}` });
  }
}

/** Plain HTTP/1.1 JSON API for tests and people: records, stats, faults, devices, health. */
export function createControlServer(ctx: SandboxContext): http.Server {
  return http.createServer((req, res) => {
    const [path, query] = (req.url ?? '/').split('?', 2);
    if (req.method === 'GET' && path === '/stats/stream') {
      req.resume();
      return streamCounts(new URLSearchParams(query ?? ''), ctx.records, res);
    }
    readBody(req)
      .then((body) => {
        const url = new URL(req.url ?? '/', 'http://sandbox');
        return req.method === 'GET' && url.pathname === '/stats/wait' ? waitForCount(url.searchParams, ctx.records) : routeControl(req.method ?? 'GET', url, body, ctx);
      })
      .then((answer) => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      })
      .catch((err: unknown) => {
        ctx.logger.warn({ err }, 'control request failed');
        res.writeHead(500);
        res.end();
      });
  });
}
