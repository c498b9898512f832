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

/** What a request holds of the bound: its Content-Length, or the bytes read so far of a chunked body. */
interface Hold {
  bytes: number;
  chunked: boolean;
  /** Until its answer is sent or its connection closes. */
  open: boolean;
}

/**
 * Bounds the request-body bytes the API works on at once (API_MAX_BODY_BYTES_IN_FLIGHT): a request
 * holds its Content-Length from its onRequest hook (after its key was checked, before its body is
 * read) until its answer is sent or its connection closes (the raw response's 'close', which comes
 * after an answer, an abort, a timeout and an error alike, so nothing leaks). One that would take
 * the total past the bound is answered at once, unread, 503 `overloaded` with Retry-After, and its
 * connection closed. A chunked body counts the bytes read as they arrive: it is admitted while the
 * bound is not full, and refused so mid-body if it fills it. A request alone is always served, so
 * a body larger than the whole bound (up to API_BODY_LIMIT_BYTES) is not refused for ever.
 * Install it after the hooks that authenticate: a request refused before it holds nothing.
 */
export function boundBodyBytesInFlight(app: FastifyInstance, bound: BodyBytesBound): void {
  let inFlight = 0;
  const holds = new WeakMap<FastifyRequest, Hold>();
  new Gauge({
    name: 'herald_api_body_bytes_in_flight',
    help: 'Request-body bytes the API is working on (announced Content-Length, or bytes read of a chunked body), bounded by API_MAX_BODY_BYTES_IN_FLIGHT',
    registers: [bound.registry],
    collect() {
      this.set(inFlight);
    },
  });
  const refusals = new Counter({
    name: 'herald_api_overload_refusals_total',
    help: 'Requests answered 503 overloaded because their body would take the bytes in flight past API_MAX_BODY_BYTES_IN_FLIGHT, by route pattern',
    labelNames: ['route'],
    registers: [bound.registry],
  });
  const refuse = (req: FastifyRequest, reply: FastifyReply, bytes: number): ApiError => {
    refusals.inc({ route: req.routeOptions.url ?? 'unmatched' });
    void reply.header('retry-after', String(OVERLOAD_RETRY_AFTER_S));
    if (!req.raw.complete) void reply.header('connection', 'close');
    return new ApiError(
      503,
      'overloaded',
      `the API is working on ${inFlight} bytes of request bodies; this one's ${bytes} would take them past API_MAX_BODY_BYTES_IN_FLIGHT (${bound.maxBytes}): nothing of it was taken, retry after ${OVERLOAD_RETRY_AFTER_S} s`,
    );
  };

  app.addHook('onRequest', async (req, reply) => {
    const headers = req.raw.headers;
    const chunked = headers['transfer-encoding'] !== undefined;
    const length = chunked ? 0 : Number(headers['content-length'] ?? 0);
    if (!chunked && !(length > 0 && length <= bound.bodyLimitBytes)) return;
    if (inFlight > 0 && (chunked ? inFlight >= bound.maxBytes : inFlight + length > bound.maxBytes)) throw refuse(req, reply, length);
    const hold: Hold = { bytes: length, chunked, open: true };
    inFlight += length;
    holds.set(req, hold);
    reply.raw.once('close', () => {
      inFlight -= hold.bytes;
      hold.bytes = 0;
      hold.open = false;
    });
  });

  // A chunked body announces no length: its bytes are counted as they are read.
  app.addHook('preParsing', async (req, reply, payload) => {
    const hold = holds.get(req);
    if (hold === undefined || !hold.chunked) return payload;
    return payload.pipe(
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          if (!hold.open) {
            done(null, chunk);
            return;
          }
          const others = inFlight - hold.bytes;
          if (others > 0 && inFlight + chunk.length > bound.maxBytes) {
            done(refuse(req, reply, hold.bytes + chunk.length));
            return;
          }
          hold.bytes += chunk.length;
          inFlight += chunk.length;
          done(null, chunk);
        },
      }),
    );
  });
}
