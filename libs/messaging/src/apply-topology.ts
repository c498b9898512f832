import type { Logger } from '@herald/logging';
import { connectBroker } from './broker.ts';
import type { Broker } from './types.ts';
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

/** The broker's refusals among amqplib's messages (the reply code, its name, the broker's message). */
const REFUSALS = /\b(403 \(ACCESS-REFUSED\)|406 \(PRECONDITION-FAILED\)|530 \(NOT-ALLOWED\) with message "NOT_ALLOWED - (vhost .* not found|access to vhost .* refused for user))/;

/**
 * What the broker refused, which trying again cannot mend: wrong credentials or permissions
 * (403 ACCESS_REFUSED), a vhost that does not exist or the user may not open (530 NOT_ALLOWED
 * saying so; amqplib gives the broker's reason through patches/amqplib+2.3.1.patch), a queue that
 * exists with other arguments (406 PRECONDITION_FAILED), in the error or one it wraps. Not a vhost
 * that is down, a connection limit reached (530 too) or a node shutting down (320): those pass.
 */
export function refusedByBroker(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (REFUSALS.test(e.message)) return true;
  return false;
}

/**
 * Declares a topology on its own short connection, as a deployment's prepare step does, trying
 * again (after 1, 2, 4, then every 5 s) while the broker is unreachable or drops the connection
 * mid-way: a cluster still forming, or a node restarting under a rolling upgrade, passes; what the
 * broker refuses fails at once. Declaring is idempotent, so a second pass over what the first
 * declared changes nothing. An attempt still going at the deadline (a broker that accepts the
 * connection and never answers, or a connection lost and not yet recovered) is given up then.
 */
export async function applyTopologyWhenReachable(opts: ApplyTopologyOptions): Promise<void> {
  const deadlineMs = opts.deadlineMs ?? 60_000;
  const deadline = Date.now() + deadlineMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await declareOnce(opts, deadline, deadlineMs);
      return;
    } catch (err) {
      const delayMs = Math.min(1000 * 2 ** (attempt - 1), 5000);
      if (refusedByBroker(err) || Date.now() + delayMs > deadline) throw err;
      opts.logger.warn({ err, attempt, delayMs }, 'declaring the queue topology failed; trying again');
      await sleep(delayMs);
    }
  }
}

/** One attempt: connect, declare, close; at the deadline it is given up and its connection closed. */
async function declareOnce(opts: ApplyTopologyOptions, deadline: number, deadlineMs: number): Promise<void> {
  let broker: Broker | undefined;
  let givenUp = false;
  const attempt = (async () => {
    broker = await connectBroker({ url: opts.url, logger: opts.logger, connectionName: opts.connectionName ?? 'herald-prepare', consumes: false });
    if (givenUp) return void (await broker.close().catch(() => undefined));
    try {
      await broker.applyTopology(opts.topology);
    } finally {
      await broker.close().catch(() => undefined);
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`declaring the queue topology did not finish within ${deadlineMs} ms`)), Math.max(0, deadline - Date.now()));
  });
  try {
    await Promise.race([attempt, late]);
  } catch (err) {
    givenUp = true;
    void broker?.close().catch(() => undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
