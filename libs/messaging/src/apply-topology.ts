import type { Logger } from '@herald/logging';
import { connectBroker } from './broker.ts';
import { sleep } from './sleep.ts';
import type { Topology } from './topology.ts';

export interface ApplyTopologyOptions {
  /** One broker URL or a comma-separated list (AMQP_URLS). */
  url: string;
  topology: Topology;
  logger: Logger;
  /** How long to keep trying while the broker cannot be reached or drops the connection. Default 60 s. */
  deadlineMs?: number;
  connectionName?: string;
}

/**
 * What the broker refused, which trying again cannot mend: wrong credentials or permissions
 * (ACCESS_REFUSED), a vhost it will not open (connection.ts names it), a queue that exists with
 * other arguments (PRECONDITION_FAILED). amqplib names the reply code and its name in the
 * message of the error or of one it wraps.
 */
export function refusedByBroker(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (/\b(403 \(ACCESS-REFUSED\)|406 \(PRECONDITION-FAILED\)|530 \(NOT-ALLOWED\))|the broker refused to open vhost/.test(e.message)) return true;
  }
  return false;
}

/**
 * Declares a topology on its own short connection, as a deployment's prepare step does, trying
 * again (after 1, 2, 4, then every 5 s) while the broker is unreachable or drops the connection
 * mid-way: a cluster still forming, or a node restarting under a rolling upgrade, passes; what the
 * broker refuses fails at once. Declaring is idempotent, so a second pass over what the first
 * declared changes nothing.
 */
export async function applyTopologyWhenReachable(opts: ApplyTopologyOptions): Promise<void> {
  const deadline = Date.now() + (opts.deadlineMs ?? 60_000);
  for (let attempt = 1; ; attempt++) {
    try {
      const broker = await connectBroker({ url: opts.url, logger: opts.logger, connectionName: opts.connectionName ?? 'herald-prepare', consumes: false });
      try {
        await broker.applyTopology(opts.topology);
        return;
      } finally {
        await broker.close().catch(() => undefined);
      }
    } catch (err) {
      const delayMs = Math.min(1000 * 2 ** (attempt - 1), 5000);
      if (refusedByBroker(err) || Date.now() + delayMs > deadline) throw err;
      opts.logger.warn({ err, attempt, delayMs }, 'declaring the queue topology failed; trying again');
      await sleep(delayMs);
    }
  }
}
