import { once } from 'node:events';
import { Server } from 'node:net';
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
 * Longest a kept-alive connection idle when the close begins is kept open: a pooled client sending
 * its next request on it meanwhile is served and told to close (a client's pool reuses a connection
 * within milliseconds of its last answer; the connection it was about to send on, closed under it,
 * lost that request to a reset). One still idle after it is closed.
 */
export const IDLE_CONNECTION_GRACE_MS = 1_000;

/**
 * Stop taking connections and close the API once its requests in flight are answered (each with
 * `Connection: close`), within `timeoutMs`. A kept-alive connection idle at the start is kept for
 * up to IDLE_CONNECTION_GRACE_MS (a third of `timeoutMs` when that is shorter), a request arriving
 * on it is served, then the idle ones are closed. Past `timeoutMs` the connections left are cut
 * (their callers get no answer: a job among them may still have been published, and a repost is its
 * duplicate).
 */
export async function closeGracefully(app: FastifyInstance, timeoutMs: number): Promise<'closed' | 'cut'> {
  draining.add(app);
  const started = performance.now();
  // http.Server.close also closes the idle connections at once; net.Server's only stops listening.
  // It emits 'close' once the last connection has gone, which ends the grace early.
  const drained = once(app.server, 'close');
  Server.prototype.close.call(app.server);
  await within(drained, Math.min(IDLE_CONNECTION_GRACE_MS, timeoutMs / 3));
  if ((await within(app.close(), timeoutMs - (performance.now() - started))) !== TIMED_OUT) return 'closed';
  app.server.closeAllConnections();
  return 'cut';
}
