import type { IncomingMessage, ServerResponse } from 'node:http';
import { ActionRefused, audited, isDatabaseUnavailable, ParkedQueueBusy, type AuditLog, type ReplayedOutcomes } from '@herald/db';
import { logSummary, type Logger } from '@herald/logging';
import { describeRefusals, listParked, parkedNameOf, purgeParked, replayParked, ReplayError, type ParkedMessage } from '@herald/messaging';
import type { HttpRoutes } from '@herald/runtime';
import type { History } from './history.ts';
import { OperatorKeysBusy, OperatorKeysUnreachable, type Operator, type OperatorGate } from './operator-gate.ts';
import type { QueueMonitor } from './queue-monitor.ts';
import { crossSiteRefusal } from './request-guard.ts';
import type { ScheduledCounts } from './scheduled-counts.ts';

export interface DashboardDeps {
  page: string;
  /** Shown (with 401) to a browser without an operator session. */
  loginPage: string;
  gate: OperatorGate;
  audit: AuditLog;
  monitor: QueueMonitor;
  history: History;
  scheduled: () => ScheduledCounts;
  /** Running audience fan-outs with their progress (GET /api/fanouts). */
  fanouts?: () => Promise<unknown>;
  /** AMQP URL of the monitored vhost, for listing and replaying parked messages. */
  amqpUrl: string;
  /**
   * Runs a list, replay or purge of a parked queue under the lease every CLI and monitor shares
   * (withParkedLease); rejects with ParkedQueueBusy while another's runs. Unset (tests): this
   * process's own order only.
   */
  parkedLease?: <T>(queue: string, work: () => Promise<T>) => Promise<T>;
  /**
   * Begins a replay's clearing of its device pushes' parked outcomes (startReplayedOutcomes), so
   * their jobs count them in flight again. Unset (tests): job statuses are left as they are.
   */
  replayedOutcomes?: () => Promise<ReplayedOutcomes>;
  logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
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

/**
 * What the dashboard lists of a parked message: where and why it was parked, not its body. A body
 * holds a device token, a user id, a push's content or a registration's attributes, and an open
 * dashboard fetches this for every parked queue with messages, unaudited; `herald parked show`
 * prints a body when an operator asks for that one. `dueSince` (when the push was due) is what the
 * CLI's age filters count from: an operator deciding on a replay needs to see how old the push is.
 */
const parkedRow = (m: ParkedMessage) => ({
  id: m.messageId ?? null,
  app: m.app ?? null,
  code: m.code ?? null,
  reason: m.reason ?? null,
  parkedAt: m.parkedAt ?? null,
  dueSince: m.dueSince ?? null,
  originalQueue: m.originalQueue,
  attempt: m.attempt,
});

/** Only the parked queues of this vhost's Herald queues: the URL cannot name anything else. */
function parkedQueueOf(deps: DashboardDeps, raw: string): string {
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'the queue name is not valid percent-encoding');
  }
  const parked = parkedNameOf(name);
  if (!deps.monitor.state().queues.some((q) => q.name === parked)) throw new HttpError(404, `no parked queue ${parked}`);
  return parked;
}

const actorOf = (operator: Operator) => ({ kind: 'operator' as const, id: operator.id, name: operator.name });

const messageIdOf = (body: Record<string, unknown>, verb: string): string => {
  if (typeof body['id'] !== 'string' || body['id'].length === 0) throw new HttpError(400, `give the parked message id to ${verb} as {"id": "..."}`);
  return body['id'];
};

/**
 * Replay one parked message; a permanent rejection only with {"force": true} (409 saying why
 * otherwise). A replayed device push whose parked outcome PostgreSQL would not clear is replayed
 * all the same, the answer's `warning` saying its job counts it parked until its new outcome.
 */
async function replay(deps: DashboardDeps, operator: Operator, body: Record<string, unknown>, queue: string): Promise<unknown> {
  const id = messageIdOf(body, 'replay');
  if (body['force'] !== undefined && typeof body['force'] !== 'boolean') throw new HttpError(400, 'force must be true or false');
  const force = body['force'] === true;
  const what = { action: 'parked.replay', target: queue, request: { id, force, via: 'dashboard' } };
  return audited(deps.audit, deps.logger, actorOf(operator), what, async () => {
    const outcomes = await deps.replayedOutcomes?.();
    const result = await replayParked({ url: deps.amqpUrl, logger: deps.logger, queue, filter: { kind: 'id', id }, force, onReplayed: outcomes?.onReplayed });
    if (result.refused.length > 0) throw new ActionRefused(describeRefusals(result.refused), { ...result });
    if (result.replayed === 0) throw new HttpError(404, `no parked message ${id} in ${queue}`);
    return outcomes?.failure === undefined ? result : { ...result, warning: outcomes.failure };
  });
}

async function purge(deps: DashboardDeps, operator: Operator, body: Record<string, unknown>, queue: string): Promise<unknown> {
  const id = messageIdOf(body, 'purge');
  const what = { action: 'parked.purge', target: queue, request: { id, via: 'dashboard' } };
  return audited(deps.audit, deps.logger, actorOf(operator), what, async () => {
    const result = await purgeParked({ url: deps.amqpUrl, logger: deps.logger, queue, filter: { kind: 'id', id } });
    if (result.purged === 0) throw new HttpError(404, `no parked message ${id} in ${queue}`);
    return result;
  });
}

/**
 * One parked operation at a time: listing holds the messages it reads (unacknowledged) until it
 * finishes, and a replay running meanwhile would not see them. In this process in turn, and
 * across processes (another monitor, a CLI) under the queue's lease: one held elsewhere is
 * answered 409 naming its holder.
 */
function serially(deps: DashboardDeps): <T>(queue: string, work: () => Promise<T>, read?: 'read') => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  const leased = async <T>(queue: string, work: () => Promise<T>, read?: 'read'): Promise<T> => {
    if (deps.parkedLease === undefined) return work();
    try {
      return await deps.parkedLease(queue, work);
    } catch (err) {
      if (err instanceof ParkedQueueBusy) throw new HttpError(409, err.message);
      // PostgreSQL down (the incident the dashboard must show): a list is read without the lease,
      // as RabbitMQ alone allows; a replay or purge, audited there, says why it cannot be done now.
      if (!isDatabaseUnavailable(err)) throw err;
      if (read === 'read') return work();
      throw new HttpError(503, `PostgreSQL does not answer (it keeps the parked queues' leases and the audit log): try again once it does`);
    }
  };
  return (queue, work, read) => {
    const next = tail.then(
      () => leased(queue, work, read),
      () => leased(queue, work, read),
    );
    tail = next.catch(() => undefined);
    return next;
  };
}

async function route(deps: DashboardDeps, req: IncomingMessage, url: URL, operator: Operator, parkedLock: ReturnType<typeof serially>): Promise<unknown> {
  const parked = /^\/api\/parked\/([^/]+)(?:\/(replay|purge))?$/.exec(url.pathname);
  if (req.method === 'GET' && url.pathname === '/api/status') return { ...deps.monitor.state(), scheduled: deps.scheduled() };
  if (req.method === 'GET' && url.pathname === '/api/fanouts') return { fanouts: (await deps.fanouts?.()) ?? [] };
  if (req.method === 'GET' && url.pathname === '/api/session') return { operator: { id: operator.id, name: operator.name } };
  if (req.method === 'GET' && url.pathname === '/api/history') {
    const minutes = Math.min(1440, Math.max(1, Number(url.searchParams.get('minutes') ?? 60) || 60));
    return deps.history.series(Date.now(), minutes * 60_000, HISTORY_POINTS);
  }
  if (parked?.[1] !== undefined && parked[2] === undefined && req.method === 'GET') {
    const queue = parkedQueueOf(deps, parked[1]);
    const { messages } = await parkedLock(queue, () => listParked({ url: deps.amqpUrl, logger: deps.logger, queue, limit: PARKED_LIST_LIMIT }), 'read');
    return { queue, messages: messages.map(parkedRow) };
  }
  if (parked?.[1] !== undefined && parked[2] !== undefined && req.method === 'POST') {
    const queue = parkedQueueOf(deps, parked[1]);
    const body = await readJson(req);
    return parkedLock(queue, () => (parked[2] === 'replay' ? replay(deps, operator, body, queue) : purge(deps, operator, body, queue)));
  }
  throw new HttpError(404, 'not found');
}

/**
 * Whether the browser logging in reached the monitor over HTTPS (through a proxy that ends TLS), so
 * its cookie is marked Secure: any value of X-Forwarded-Proto's list is https (Node joins a header
 * sent twice as "https, https"; proxies append theirs), or the login's Origin is an https: one (a
 * proxy that sets no X-Forwarded-Proto; the Origin was checked to name this host).
 */
function reachedOverHttps(req: IncomingMessage): boolean {
  const proto = req.headers['x-forwarded-proto'];
  const origin = req.headers['origin'];
  return (
    (typeof proto === 'string' && proto.split(',').some((p) => p.trim().toLowerCase() === 'https')) ||
    (typeof origin === 'string' && origin.toLowerCase().startsWith('https:'))
  );
}

/** POST /api/login {"key": "<operator key>"}: opens a session (cookie); POST /api/logout ends it. */
async function session(deps: DashboardDeps, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const refusal = crossSiteRefusal(req, 'none');
  if (refusal !== undefined) throw new HttpError(403, refusal);
  if (path === '/api/logout') {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'set-cookie': deps.gate.logout(req) }).end('{"ok":true}');
    return;
  }
  const body = await readJson(req);
  if (typeof body['key'] !== 'string' || body['key'].length === 0) throw new HttpError(400, 'give the operator key as {"key": "..."}');
  const opened = await deps.gate.login(body['key'], reachedOverHttps(req));
  if (opened === undefined) throw new HttpError(401, 'unknown or revoked operator key');
  deps.logger.info({ operator: opened.operator }, 'operator logged in to the dashboard');
  res
    .writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'set-cookie': opened.cookie })
    .end(JSON.stringify({ operator: opened.operator }));
}

/** Pages are never framed by another site (no clickjacking of a replay button). */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
};

const UNAUTHORIZED = 'an operator key is required: log in on the dashboard, or send authorization: Bearer <operator key> (herald keys create --operator <name>)';

/** Who a request turned out to be, for the log line of its refusal. */
interface Asker {
  operator?: Operator;
}

async function handle(deps: DashboardDeps, req: IncomingMessage, res: ServerResponse, url: URL, parkedLock: ReturnType<typeof serially>, asker: Asker): Promise<void> {
  if (req.method === 'POST' && (url.pathname === '/api/login' || url.pathname === '/api/logout')) {
    await session(deps, req, res, url.pathname);
    return;
  }
  const operator = await deps.gate.authenticate(req);
  asker.operator = operator;
  const page = url.pathname === '/' || url.pathname === '/index.html';
  if (operator === undefined) {
    if (!page || req.method !== 'GET') throw new HttpError(401, UNAUTHORIZED);
    // A browser opening the page before logging in is no refusal worth a line; a script's wrong key is.
    if (req.headers['authorization'] !== undefined) logRefusal(deps.logger, req, url, 401, 'unknown or revoked operator key', asker);
    res.writeHead(401, PAGE_HEADERS).end(deps.loginPage);
    return;
  }
  const refusal = crossSiteRefusal(req, operator.via);
  if (refusal !== undefined) throw new HttpError(403, refusal);
  if (page) {
    if (req.method !== 'GET') throw new HttpError(405, 'GET only');
    res.writeHead(200, PAGE_HEADERS).end(deps.page);
    return;
  }
  sendJson(res, 200, await route(deps, req, url, operator, parkedLock));
}

/**
 * A refusal at the dashboard's door (401, 403) at warn: who asked (the connecting address, and
 * X-Forwarded-For when a proxy set it), how (bearer, session cookie, none), where, and the operator
 * when one was identified (a cross-site write riding a named operator's session); never the key.
 * Once per address, status and operator every few seconds, then how many more (logSummary).
 */
function logRefusal(logger: Logger, req: IncomingMessage, url: URL, status: number, reason: string, asker: Asker): void {
  const remote = req.socket.remoteAddress ?? 'unknown';
  const forwardedFor = req.headers['x-forwarded-for'];
  const credential = req.headers['authorization'] !== undefined ? 'bearer' : req.headers['cookie'] !== undefined ? 'cookie' : 'none';
  const operator = asker.operator === undefined ? undefined : { id: asker.operator.id, name: asker.operator.name };
  logSummary(logger, 'warn', 'dashboard request refused').note(`${status}\u0000${remote}\u0000${operator?.id ?? ''}`, {
    status,
    remote,
    ...(forwardedFor !== undefined && { forwardedFor: String(forwardedFor).slice(0, 200) }),
    method: req.method,
    path: url.pathname,
    credential,
    ...(operator !== undefined && { operator }),
    reason,
  });
}

/**
 * GET / (the page, or the login page with 401), GET /api/status, /api/history, /api/session,
 * /api/parked/:queue, POST /api/parked/:queue/replay|purge, POST /api/login|logout. Everything but
 * login needs an operator key (bearer or session); writes are CSRF-checked and audited.
 */
/** The request's target as a URL, or null when URL cannot read it (URL.parse is Node 20.18+). */
function parsedTarget(target: string | undefined): URL | null {
  try {
    return new URL(target ?? '/', 'http://monitor');
  } catch {
    return null;
  }
}

export function dashboardRoutes(deps: DashboardDeps): HttpRoutes {
  const parkedLock = serially(deps);
  return (req, res) => {
    const url = parsedTarget(req.url);
    // A target Node's parser takes but URL does not (`//[`): no route of ours.
    if (url === null) {
      sendJson(res, 400, { error: 'the request target is not a URL path', code: 'bad-url' });
      return true;
    }
    if (!(url.pathname === '/' || url.pathname === '/index.html' || url.pathname.startsWith('/api/'))) return false;
    const asker: Asker = {};
    handle(deps, req, res, url, parkedLock, asker).catch((err: Error) => {
      const refused = err instanceof ActionRefused;
      // A replay RabbitMQ did not let finish (an alarm, no confirm), or a key the database cannot
      // check now (or too many being checked), says why: the operator retries later. The gate logs
      // the database's outage once.
      const unavailable = err instanceof ReplayError || err instanceof OperatorKeysUnreachable || err instanceof OperatorKeysBusy;
      const status = err instanceof HttpError ? err.status : refused ? 409 : unavailable ? 503 : 500;
      if (status === 500) deps.logger.error({ err, path: url.pathname }, 'dashboard request failed');
      if (status === 401 || status === 403) logRefusal(deps.logger, req, url, status, err.message, asker);
      const extra = err instanceof HttpError ? err.extra : refused ? { code: 'permanent-rejection', ...err.details } : {};
      // An unexpected failure's message stays in the log: it may name an address, and the caller may not be signed in.
      const error = status === 500 ? "internal error (the monitor's log has it)" : err.message;
      if (!res.headersSent) sendJson(res, status, { error, ...extra });
    });
    return true;
  };
}
