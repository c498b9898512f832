import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, type Registry } from '@herald/runtime';
import { ApiError } from './api-error.ts';

/** Seconds an overloaded API asks a client to wait (Retry-After): its requests are answered in milliseconds. */
export const OVERLOAD_RETRY_AFTER_S = 1;

export interface BodyBytesBound {
  /** API_MAX_BODY_BYTES_IN_FLIGHT: most request-body bytes worked on at once. */
  maxBytes: number;
  /** API_BODY_LIMIT_BYTES: a body announced larger is refused 413 by the parser, unread, so it is not counted. */
  bodyLimitBytes: number;
  registry: Registry;
}

/** What a request holds of the bound: the bytes of its body read so far. */
interface Hold {
  bytes: number;
  /** Until its response closes or its connection does. */
  open: boolean;
  /** Refused mid-body: the rest of its body is discarded as it arrives, its connection kept. */
  draining: boolean;
}

/**
 * Bounds the request-body bytes the API works on at once (API_MAX_BODY_BYTES_IN_FLIGHT). A body
 * counts the bytes read, as they are read, never the Content-Length it announces: a client that
 * announces a large body and sends it slowly holds only what it sent. A request with a body is
 * admitted at its headers (its onRequest hook, after its key was checked) while the total is under
 * the bound, and refused mid-body if reading a chunk would take the total past it while other
 * requests hold bytes. A request alone is always served, so a body larger than the whole bound (up
 * to API_BODY_LIMIT_BYTES) is not refused for ever. A refusal is 503 `overloaded` with Retry-After.
 *
 * The bytes are given back once, on the first of the response's 'close' and its connection's
 * 'close': a pipelined request's response has no socket until the ones before it are written, so
 * if the client drops the connection first that response never closes. (The request's own
 * 'close' is not used: it can come when its body is read, long before its bytes are done with.)
 *
 * No refusal sets `Connection: close`: closing a connection whose body is still arriving makes
 * the kernel reset it, and the client may then see ECONNRESET instead of the 503. At the headers,
 * Node discards the unread body itself; mid-body, the rest is read and discarded here, counted
 * nowhere and buffered nowhere, bounded by the request timeout and API_BODY_LIMIT_BYTES (Fastify
 * marks any answer to a body that failed to parse `Connection: close`; that header is taken off).
 * Install it after the hooks that authenticate: a request refused before it holds nothing.
 */
export function boundBodyBytesInFlight(app: FastifyInstance, bound: BodyBytesBound): void {
  let inFlight = 0;
  const holds = new WeakMap<FastifyRequest, Hold>();
  new Gauge({
    name: 'herald_api_body_bytes_in_flight',
    help: 'Request-body bytes the API is working on (the bytes read so far of each body, not its announced Content-Length), bounded by API_MAX_BODY_BYTES_IN_FLIGHT',
    registers: [bound.registry],
    collect() {
      this.set(inFlight);
    },
  });
  const refusals = new Counter({
    name: 'herald_api_overload_refusals_total',
    help: 'Requests answered 503 overloaded because reading their body would take the bytes in flight past API_MAX_BODY_BYTES_IN_FLIGHT, by route pattern',
    labelNames: ['route'],
    registers: [bound.registry],
  });
  const refuse = (req: FastifyRequest, reply: FastifyReply): ApiError => {
    refusals.inc({ route: req.routeOptions.url ?? 'unmatched' });
    void reply.header('retry-after', String(OVERLOAD_RETRY_AFTER_S));
    return new ApiError(
      503,
      'overloaded',
      `the API is working on ${inFlight} bytes of request bodies; reading this one's would take them past API_MAX_BODY_BYTES_IN_FLIGHT (${bound.maxBytes}): nothing of it was taken, retry after ${OVERLOAD_RETRY_AFTER_S} s`,
    );
  };

  app.addHook('onRequest', async (req, reply) => {
    const headers = req.raw.headers;
    const chunked = headers['transfer-encoding'] !== undefined;
    const length = chunked ? 0 : Number(headers['content-length'] ?? 0);
    if (!chunked && !(length > 0 && length <= bound.bodyLimitBytes)) return;
    if (inFlight > 0 && inFlight >= bound.maxBytes) throw refuse(req, reply);
    const hold: Hold = { bytes: 0, open: true, draining: false };
    holds.set(req, hold);
    const socket = req.raw.socket as typeof req.raw.socket | null;
    const release = () => {
      if (!hold.open) return;
      hold.open = false;
      inFlight -= hold.bytes;
      hold.bytes = 0;
      socket?.off('close', release);
    };
    reply.raw.once('close', release);
    socket?.once('close', release);
  });

  app.addHook('preParsing', async (req, reply, payload) => {
    const hold = holds.get(req);
    if (hold === undefined) return payload;
    return payload.pipe(
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          if (!hold.open) {
            done(null, chunk);
            return;
          }
          const others = inFlight - hold.bytes;
          if (others > 0 && inFlight + chunk.length > bound.maxBytes) {
            // The rest of the body is discarded as it arrives once the 503 is written (see above).
            hold.draining = true;
            reply.raw.once('finish', () => req.raw.resume());
            done(refuse(req, reply));
            return;
          }
          hold.bytes += chunk.length;
          inFlight += chunk.length;
          done(null, chunk);
        },
      }),
    );
  });
  app.addHook('onSend', async (req, reply, payload) => {
    if (holds.get(req)?.draining === true) void reply.removeHeader('connection');
    return payload;
  });
}
