import type { FastifyInstance, FastifyRequest } from 'fastify';

type Headers = Record<string, string | string[] | undefined>;

/**
 * Checks the key of every request under `prefix` in an onRequest hook, before its body is read: a
 * request without a valid key is answered 401 at once (and its connection closed when a body was
 * announced), so a client without a key cannot hold the API's memory with large bodies sent slowly
 * or never finished. Returns how a route gets what the hook found (a route outside the prefix
 * authenticates then).
 */
export function authenticateFirst<T extends object>(
  app: FastifyInstance,
  prefix: string,
  authenticate: (headers: Headers) => Promise<T>,
): (req: FastifyRequest) => Promise<T> {
  const found = new WeakMap<FastifyRequest, T>();
  app.addHook('onRequest', async (req, reply) => {
    // The route matched, not the raw URL: the router decodes escapes, so /%761/jobs is /v1/jobs.
    if (!(req.routeOptions.url ?? req.url).startsWith(prefix)) return;
    try {
      found.set(req, await authenticate(req.headers));
    } catch (err) {
      // The body it announced is never read: end the connection with the answer instead of keeping it to drain.
      if (!req.raw.complete) void reply.header('connection', 'close');
      throw err;
    }
  });
  return async (req) => found.get(req) ?? authenticate(req.headers);
}
