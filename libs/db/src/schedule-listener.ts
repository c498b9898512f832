import pg from 'pg';
import type { Logger } from '@herald/logging';
import { clientClassFor } from './pg-hosts.ts';

export interface ScheduleListenerOptions {
  url: string;
  schema: string;
  channel: string;
  logger?: Logger | undefined;
  /** Wait before reconnecting a lost listening connection. */
  reconnectMs?: number;
  /**
   * How often the listening connection is asked a `select 1`, and how long it may take to answer
   * before the connection is taken for dead and replaced (defaults 15 s and 5 s).
   */
  heartbeatMs?: number;
  heartbeatTimeoutMs?: number;
}

export interface ScheduleListener {
  close(): Promise<void>;
}

/**
 * LISTEN on a dedicated connection (a pooled one would lose the subscription). The payload is
 * the earliest due time in epoch ms. A lost connection is re-established after reconnectMs;
 * notifications sent meanwhile are missed, so each reconnect calls `onSchedule(now)` (look at the
 * store now) and callers keep a safety re-check timer as well. A connection that dies without a
 * word (a NAT or firewall dropping an idle flow, a host gone without a reset) never ends and never
 * errs: a listener on it would hear nothing, releasing due pushes only at each re-check, for good.
 * So the connection answers a `select 1` every heartbeatMs, and one that does not within
 * heartbeatTimeoutMs is replaced like a lost one.
 */
export async function listenForSchedules(options: ScheduleListenerOptions, onSchedule: (earliestDueAt: Date) => void): Promise<ScheduleListener> {
  const { logger, reconnectMs = 1_000, heartbeatMs = 15_000, heartbeatTimeoutMs = 5_000 } = options;
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  /** A connect in progress (a reconnect asked meanwhile waits for its outcome instead of starting a second). */
  let connecting = false;
  /** Within heartbeatTimeoutMs, or it is taken for lost (an address that drops packets never answers at all). */
  const inTime = async <T>(work: Promise<T>, what: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${heartbeatTimeoutMs} ms`)), heartbeatTimeoutMs);
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  let beating = false;
  const heartbeat = setInterval(() => {
    const c = client;
    if (c === undefined || beating) return;
    beating = true;
    inTime(c.query('select 1'), 'heartbeat')
      .catch((err: unknown) => {
        if (client !== c) return;
        logger?.warn({ err, channel: options.channel }, 'schedule listener connection stopped answering: replacing it');
        client = undefined;
        void c.end().catch(() => undefined);
        reconnect();
      })
      .finally(() => {
        beating = false;
      });
  }, heartbeatMs);
  heartbeat.unref();
  const reconnect = (): void => {
    if (closed || connecting) return;
    clearTimeout(retry);
    retry = setTimeout(() => {
      // Notifications sent while the connection was down are lost: tell the caller to look now.
      connect().then(() => onSchedule(new Date()), (err: unknown) => {
        logger?.warn({ err, channel: options.channel }, 'schedule listener could not reconnect: retrying');
        reconnect();
      });
    }, reconnectMs);
  };
  const Client = clientClassFor(options.url);
  const connect = async (): Promise<void> => {
    connecting = true;
    try {
      await connectOnce();
    } finally {
      connecting = false;
    }
  };
  const connectOnce = async (): Promise<void> => {
    const c = new Client({ connectionString: options.url, application_name: 'herald-listen', connectionTimeoutMillis: heartbeatTimeoutMs });
    c.on('notification', (n) => {
      const ms = Number(n.payload);
      if (Number.isFinite(ms)) onSchedule(new Date(ms));
    });
    c.on('error', (err) => logger?.warn({ err, channel: options.channel }, 'schedule listener connection failed'));
    c.on('end', () => {
      if (client !== c) return;
      client = undefined;
      reconnect();
    });
    try {
      await c.connect();
      await inTime(c.query(`LISTEN "${options.channel}"`), 'LISTEN');
    } catch (err) {
      void c.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      void c.end().catch(() => undefined);
      return;
    }
    client = c;
  };
  await connect();
  return {
    close: async () => {
      closed = true;
      clearTimeout(retry);
      clearInterval(heartbeat);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
