import type { FastifyInstance } from 'fastify';
import { TIMED_OUT, within } from '@herald/runtime';

/** APIs being closed: every answer they still give says `Connection: close`. */
const draining = new WeakSet<FastifyInstance>();

/**
 * Once the API is closing, every answer carries `Connection: close`, so a client pooling keep-alive
 * connections takes a new one (to another replica) for its next request instead of sending it
 * here, where it met a 503 in Fastify's own shape, not the API's, or kept the connection, and the
 * close, open until the 72 s keep-alive ran out. Set as the answer is sent (onSend): a request
 * already on its way when the close began (a job waiting for RabbitMQ's confirm) is answered so
 * too. Installed by buildApiServer.
 */
export function closeConnectionsWhenDraining(app: FastifyInstance): void {
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (draining.has(app)) void reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * Stop taking connections and close the API once its requests in flight are answered (each with
 * `Connection: close`; idle keep-alive connections are closed at once, a request already on its way
 * on one is still served), within `timeoutMs`: past it, the connections left are cut (their callers
 * get no answer: a job among them may still have been published, and a repost is its duplicate).
 */
export async function closeGracefully(app: FastifyInstance, timeoutMs: number): Promise<'closed' | 'cut'> {
  draining.add(app);
  if ((await within(app.close(), timeoutMs)) !== TIMED_OUT) return 'closed';
  app.server.closeAllConnections();
  return 'cut';
}
