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
}

export interface ScheduleListener {
  close(): Promise<void>;
}

/**
 * LISTEN on a dedicated connection (a pooled one would lose the subscription). The payload is
 * the earliest due time in epoch ms. A lost connection is re-established after reconnectMs;
 * notifications sent meanwhile are missed, so each reconnect calls `onSchedule(now)` (look at the
 * store now) and callers keep a safety re-check timer as well.
 */
export async function listenForSchedules(options: ScheduleListenerOptions, onSchedule: (earliestDueAt: Date) => void): Promise<ScheduleListener> {
  const { logger, reconnectMs = 1_000 } = options;
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const reconnect = (): void => {
    if (closed) return;
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
    const c = new Client({ connectionString: options.url, application_name: 'herald-listen' });
    c.on('notification', (n) => {
      const ms = Number(n.payload);
      if (Number.isFinite(ms)) onSchedule(new Date(ms));
    });
    c.on('error', (err) => logger?.warn({ err, channel: options.channel }, 'schedule listener connection failed'));
    c.on('end', () => {
      if (client === c) reconnect();
    });
    await c.connect();
    await c.query(`LISTEN "${options.channel}"`);
    client = c;
  };
  await connect();
  return {
    close: async () => {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
