import { isUtf8 } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { MAX_APP_ID_LENGTH, MAX_JOB_ID_LENGTH, MAX_TOPIC_NAME_LENGTH, NOT_UTF8 } from '@herald/contracts';
import { isDatabaseUnavailable, type ApiKeyRow } from '@herald/db';
import { logSummary, type Logger } from '@herald/logging';
import { BrokerUnavailableError, PublishFailedError } from '@herald/messaging';
import type { Registry } from '@herald/runtime';
import { ApiError, fromFastifyError } from './api-error.ts';
import { type KeyLookup, createKeyAuthenticator } from './auth.ts';
import { authenticateFirst } from './authenticate-first.ts';
import { boundBodyBytesInFlight } from './body-bytes-in-flight.ts';
import { closeConnectionsWhenDraining } from './graceful-close.ts';
import { acceptJob, acceptJobs, cancelJob, jobPushes, jobStatus, type JobServiceDeps } from './job-service.ts';
import { registerDevice, unregisterDevice, type DeviceServiceDeps } from './device-service.ts';
import type { AdminDeps } from './admin-service.ts';
import { limitAdminGuesses } from './admin-auth.ts';
import { adminRoutes } from './admin-routes.ts';
import { openApiDocument } from './openapi.ts';
import { instrumentRequests, type PublishTimings, type RequestMetrics } from './request-metrics.ts';
import {
  createSubscription,
  deleteSubscription,
  enableSubscription,
  rotateSubscriptionSecret,
  getSubscription,
  listSubscriptions,
  type SubscriptionServiceDeps,
} from './subscription-service.ts';
import { acceptChange, type ChangeServiceDeps } from './change-service.ts';
import { registerPreferenceRoutes } from './preference-routes.ts';
import { registerAudienceRoutes } from './audience-routes.ts';
import type { AudienceServiceDeps } from './audience-service.ts';
import type { PreferenceServiceDeps } from './preference-service.ts';
import type { UserDevicesServiceDeps } from './user-devices-service.ts';
import type { UserErasureServiceDeps } from './user-erasure-service.ts';
import { vapidPublicKey, type WebPushServiceDeps } from './web-push-service.ts';

export interface ApiServerDeps extends JobServiceDeps, DeviceServiceDeps, SubscriptionServiceDeps, ChangeServiceDeps, PreferenceServiceDeps, UserDevicesServiceDeps, UserErasureServiceDeps, WebPushServiceDeps, AudienceServiceDeps {
  keys: KeyLookup;
  admin: AdminDeps;
  adminKey: string | undefined;
  bodyLimitBytes: number;
  /** Most request-body bytes worked on at once (API_MAX_BODY_BYTES_IN_FLIGHT); past it a request is answered 503 overloaded, unread. */
  maxBodyBytesInFlight: number;
  /** Longest time a client may take to send a whole request; a slower one is answered 408 and its connection closed. */
  requestTimeoutMs: number;
  keyCacheTtlMs: number;
  logger: Logger;
  registry: Registry;
}

type Params = { id: string };
type Handler = (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => Promise<unknown>;

function onError(deps: ApiServerDeps) {
  return (err: Error & { code?: string; statusCode?: number }, req: FastifyRequest, reply: FastifyReply): void => {
    const known = err instanceof ApiError ? err : (brokerRefusal(err) ?? unstorableValue(err) ?? fromFastifyError(err, deps.bodyLimitBytes));
    if (known !== undefined) {
      if (known.status === 401) logRefusedKey(deps.logger, req, known);
      void reply.status(known.status).send(known.body());
      return;
    }
    // PostgreSQL or RabbitMQ away (connection refused, admin shutdown, connection failure), or a
    // statement past its bound (a server too slow to answer, isDatabaseUnavailable), or rolled back as a
    // deadlock or serialization failure (class 40: a user erasure and a batch of its app, say): retryable.
    const unavailable = (typeof err.code === 'string' && /^(ECONN|EPIPE|57P|08|40)/.test(err.code)) || isDatabaseUnavailable(err);
    // The route, not the URL: a query string names users (GET /v1/devices?app=&userId=). An outage
    // fails every request alike: said once per route and code every few seconds, with how many more.
    const route = req.routeOptions.url ?? 'unmatched';
    const fields = { err, method: req.method, route };
    if (unavailable) logSummary(deps.logger, 'error', 'api request failed').note(`${req.method} ${route}\u0000${err.code ?? ''}`, fields);
    else deps.logger.error(fields, 'api request failed');
    // The code, not the message: a caller (maybe not yet authenticated) is not told the database's address.
    const answer = unavailable ? new ApiError(503, 'unavailable', `a dependency is unavailable (${err.code ?? 'no answer in time'}), retry`) : new ApiError(500, 'internal', 'internal error');
    void reply.status(answer.status).send(answer.body());
  };
}

/**
 * A refused authentication (401) at warn, with who asked (the connecting address, X-Forwarded-For
 * when a proxy set it) and where, never the key: once per door and address every few seconds, then
 * how many more (logSummary), so a guessing flood is a few lines.
 */
function logRefusedKey(logger: Logger, req: FastifyRequest, refusal: ApiError): void {
  const route = req.routeOptions.url ?? 'unmatched';
  const door = route.startsWith('/admin/') ? 'admin' : 'team';
  const forwardedFor = req.headers['x-forwarded-for'];
  logSummary(logger, 'warn', 'authentication refused').note(`${door}\u0000${req.ip}`, {
    door,
    remote: req.ip,
    ...(forwardedFor !== undefined && { forwardedFor: String(forwardedFor).slice(0, 200) }),
    method: req.method,
    route,
    reason: refusal.message,
  });
}

/**
 * A value PostgreSQL refused as data (a NUL byte, a character its encoding lacks, text a typed
 * column cannot read, a date or time out of its range: 22008) that no check before it caught: the
 * caller's to fix, so a 400 saying so (PostgreSQL's message names the value), not a 500 logged as
 * Herald's failure.
 */
function unstorableValue(err: Error & { code?: string }): ApiError | undefined {
  if (err.code !== '22021' && err.code !== '22P05' && err.code !== '22P02' && err.code !== '22008') return undefined;
  return new ApiError(400, 'invalid-request', `a value in the request cannot be stored: ${err.message}`);
}

/**
 * RabbitMQ did not take a registration or change (not connected, a nack, no confirm within
 * API_PUBLISH_CONFIRM_TIMEOUT_MS): retryable, like a job's publish (503 broker-unavailable).
 */
function brokerRefusal(err: Error): ApiError | undefined {
  if (!(err instanceof PublishFailedError || err instanceof BrokerUnavailableError)) return undefined;
  return new ApiError(503, 'broker-unavailable', `RabbitMQ did not take it (${err.message}); retry`);
}

/** Team routes (/v1/...): the API key is checked before the body is read, then the handler gets it. */
function teamRoutes(app: FastifyInstance, deps: ApiServerDeps, metrics: RequestMetrics): void {
  const keyOf = authenticateFirst(app, '/v1/', createKeyAuthenticator(deps.keys, deps.keyCacheTtlMs));
  const team = (fn: (req: FastifyRequest<{ Params: Params }>, key: ApiKeyRow, reply: FastifyReply) => Promise<unknown>): Handler => async (req, reply) =>
    fn(req, await keyOf(req), reply);
  /** Run a publish, then time its stages (also when it failed) before the answer is written. */
  const publishing = async <T>(reply: FastifyReply, run: (timings: PublishTimings) => Promise<T>): Promise<T> => {
    const timings: PublishTimings = {};
    try {
      return await run(timings);
    } finally {
      metrics.publishTimings(reply, timings);
    }
  };
  app.post('/v1/jobs', team(async (req, key, reply) => {
    const result = await publishing(reply, (t) => acceptJob(req.body, key, deps, t));
    return reply.status(result.duplicate ? 200 : 202).send(result);
  }));
  app.post('/v1/jobs::batch', team(async (req, key, reply) => reply.status(202).send({ results: await publishing(reply, (t) => acceptJobs(req.body, key, deps, t)) })));
  app.get('/v1/jobs/:id', team(async (req, key) => jobStatus(req.params.id, key, deps)));
  app.get('/v1/jobs/:id/pushes', team(async (req, key) => jobPushes(req.params.id, req.query, key, deps)));
  app.delete('/v1/jobs/:id', team(async (req, key) => cancelJob(req.params.id, key, deps)));
  app.post('/v1/devices', team(async (req, key, reply) => {
    await registerDevice(req.body, key, deps);
    return reply.status(202).send({ accepted: true });
  }));
  app.delete('/v1/devices', team(async (req, key, reply) => {
    await unregisterDevice(req.body, key, deps);
    return reply.status(202).send({ accepted: true });
  }));
  app.post('/v1/subscriptions', team(async (req, key, reply) => reply.status(201).send(await createSubscription(req.body, key, deps))));
  app.get('/v1/subscriptions', team(async (req, key) => listSubscriptions(req.query, key, deps)));
  app.get('/v1/subscriptions/:id', team(async (req, key) => getSubscription(req.params.id, key, deps)));
  app.delete('/v1/subscriptions/:id', team(async (req, key, reply) => {
    await deleteSubscription(req.params.id, key, deps);
    return reply.status(204).send();
  }));
  app.post('/v1/subscriptions/:id/enable', team(async (req, key) => enableSubscription(req.params.id, key, deps)));
  app.post('/v1/subscriptions/:id/rotate-secret', team(async (req, key) => rotateSubscriptionSecret(req.params.id, req.body, key, deps)));
  app.get('/v1/web-push/vapid-public-key', team(async (req, key) => vapidPublicKey(req.query, key, deps)));
  app.post('/v1/changes', team(async (req, key, reply) => reply.status(202).send(await acceptChange(req.body, key.team, deps))));
  registerPreferenceRoutes(app, team, deps);
  registerAudienceRoutes(app, team, deps);
}

/**
 * The longest path parameter the contracts allow: a job id (/v1/jobs/:id), a topic name
 * (/v1/topics/:name), an app id (/admin/apps/:id) or a subscription id (a UUID, 36 characters).
 * Fastify's default (100) answered a longer one 414 before any handler ran, so a job with a
 * 150-character id could be posted but never looked at or cancelled. The router checks the
 * decoded parameter, so a percent-encoded character counts once.
 */
const MAX_PATH_PARAM_LENGTH = Math.max(MAX_JOB_ID_LENGTH, MAX_TOPIC_NAME_LENGTH, MAX_APP_ID_LENGTH, 36);

/**
 * JSON bodies must be UTF-8 (RFC 8259 §8.1), whatever charset the request names: Fastify's parser
 * decoded any bytes, each invalid sequence becoming U+FFFD, so a Latin-1 "café" was accepted as
 * "caf\uFFFD" (shown so on the lock screen) and two users' ids could become one ("cafè" and "café"),
 * one user's pushes then reaching the other's devices. Such a body is a 400; the rest is Fastify's
 * own parser (its prototype-poisoning checks included).
 */
function utf8JsonOnly(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) {
      done(new ApiError(400, 'malformed-json', `${NOT_UTF8}: JSON must be UTF-8 (RFC 8259)`), undefined);
      return;
    }
    void parse(req, bytes.toString('utf8'), done);
  });
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request (a body that stalls past the request
 * timeout, headers over the limit, a malformed request line), answered in the API's error shape:
 * Fastify's own answer ({"error": "Request Timeout", …}) was not, and a client reading ours
 * (the client library's HeraldApiError) could not tell what it was. The connection is closed.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError(408, 'request-timeout', 'the request did not arrive whole within the request timeout')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError(431, 'headers-too-large', 'the request headers are larger than the limit')
        : new ApiError(400, 'bad-request', 'the request is not valid HTTP');
  const body = JSON.stringify(refusal.body());
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/**
 * The team-facing HTTP API: JSON only, bodies up to bodyLimitBytes, every refusal a clear 4xx.
 * A request must arrive whole within requestTimeoutMs (Fastify's default, 0, would also turn off
 * Node's own limit): a client sending a large body slowly, or never finishing it, is answered 408
 * and its connection closed. Node is given the timeout when the server is created, so it lowers
 * its headersTimeout (60 s) to it: a headersTimeout longer than the request timeout is taken as
 * the request timeout. It checks its connections every connectionsCheckingInterval (30 s by
 * default); a tenth of the timeout closes a stalled request within 10 % of it.
 */
export function buildApiServer(deps: ApiServerDeps): FastifyInstance {
  const app = Fastify({
    bodyLimit: deps.bodyLimitBytes,
    requestTimeout: deps.requestTimeoutMs,
    http: { requestTimeout: deps.requestTimeoutMs, connectionsCheckingInterval: Math.ceil(deps.requestTimeoutMs / 10) },
    logger: false,
    // A request on a kept-alive connection while the API closes is served (closeGracefully): its
    // answer tells the client to take a new connection. Fastify's 503 was not in the API's shape.
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    clientErrorHandler: answerClientError,
    // The router's own refusals in the API's error shape ({error: {code, message}}), not Fastify's
    // ({error: "Bad Request", code: "FST_…"}, whose `error` is a string a client reading ours breaks on).
    frameworkErrors: (err, _req, reply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      const refusal = tooLong
        ? new ApiError(414, 'param-too-long', `a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`)
        : new ApiError(400, 'bad-url', 'the request path is not a valid URL (a malformed percent-encoding)');
      // frameworkErrors' reply is typed for a request with no route; it is an ordinary reply.
      void (reply as FastifyReply).status(refusal.status).send(refusal.body());
    },
  });
  // A request with no body is one, whatever content type it names: Fastify parsed the nothing a
  // DELETE /v1/jobs/:id (or an enable, a rotate-secret) sent by a client with a session-wide
  // `content-type: application/json` carries, and refused the cancel 400 (415 naming text/plain).
  // A route that needs a body still answers its absence 400 (parseBody).
  app.addHook('onRequest', async (req) => {
    const h = req.raw.headers;
    if (h['content-type'] !== undefined && h['transfer-encoding'] === undefined && (h['content-length'] === undefined || h['content-length'] === '0')) delete h['content-type'];
  });
  // JSON only: Fastify also parses text/plain by default, which would reach validation as a string.
  app.removeContentTypeParser('text/plain');
  utf8JsonOnly(app);
  app.setErrorHandler(onError(deps));
  closeConnectionsWhenDraining(app);
  const metrics = instrumentRequests(app, deps.registry);
  const noRoute = (req: FastifyRequest): ApiError => new ApiError(404, 'no-route', `no route ${req.method} ${req.url.split('?')[0] ?? ''}`);
  app.setNotFoundHandler((req, reply) => {
    void reply.status(404).send(noRoute(req).body());
  });
  // An unknown route (POST /x, POST /healthz) is answered before its body is read, as a request
  // without a key is under /v1/ and /admin/: its 404 needs no body, and read, any client could have
  // the API parse up to the body limit, sent as slowly as the request timeout allows.
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url !== undefined) return;
    if (!req.raw.complete) void reply.header('connection', 'close');
    throw noRoute(req);
  });
  const document = openApiDocument();
  app.get('/openapi.json', async () => document);
  app.get('/healthz', async () => ({ ok: true }));
  teamRoutes(app, deps, metrics);
  limitAdminGuesses(app, deps.logger);
  adminRoutes(app, deps);
  // After every hook that refuses a request unread (a bad key, an unknown route): those hold nothing.
  boundBodyBytesInFlight(app, { maxBytes: deps.maxBodyBytesInFlight, bodyLimitBytes: deps.bodyLimitBytes, registry: deps.registry });
  return app;
}
