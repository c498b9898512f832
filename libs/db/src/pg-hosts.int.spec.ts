/**
 * A DATABASE_URL with several hosts. A real replica pair is too heavy for this machine, so the
 * primary switch is tested as a restart with a changed primary: the "old primary" is a TCP proxy
 * in front of the local server, closed mid-run with every connection through it; the second host
 * in the list is the server itself.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createDatabase } from './database.ts';
import { parseHostList } from './pg-hosts.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('hosts');
});
afterAll(() => t.drop());

/** A TCP proxy to 127.0.0.1:5432 on a free port; close() drops every connection through it. */
async function startProxy(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(5432, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A TCP proxy to 127.0.0.1:5432 that resets a connection as soon as its client sends `text` (a query). */
async function startResettingProxy(text: string): Promise<{ port: number; resets: () => number; close(): Promise<void> }> {
  let resets = 0;
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(5432, '127.0.0.1');
    for (const s of [client, upstream]) s.on('error', () => undefined);
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      if (!chunk.includes(text)) return void upstream.write(chunk);
      resets++;
      upstream.destroy();
      client.resetAndDestroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, resets: () => resets, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const withHosts = (url: string, hosts: string): string => url.replace('127.0.0.1:5432', hosts);

describe('a DATABASE_URL listing several hosts', () => {
  it('parses libpq-style host lists and target_session_attrs', () => {
    expect(parseHostList('postgres://u:p@a:5432,b:6432/db?target_session_attrs=read-write&sslmode=disable')).toEqual({
      urls: ['postgres://u:p@a:5432/db?sslmode=disable', 'postgres://u:p@b:6432/db?sslmode=disable'],
      readWrite: true,
    });
    expect(parseHostList('postgres://u@h/db')).toEqual({ urls: ['postgres://u@h/db'], readWrite: false });
  });

  it('connects through the next host when the first does not answer, and checks it is the primary', async () => {
    const db = createDatabase({ url: withHosts(`${t.url}?target_session_attrs=read-write`, '127.0.0.1:1,127.0.0.1:5432'), schema: t.schema, poolSize: 2 });
    try {
      // The pool's first connection goes to the dead host and fails; the next goes to the live one.
      const attempt = () => sql<{ one: number }>`select 1 as one`.execute(db.kysely);
      const first = await attempt().then(() => 'ok', (err: Error) => err.message);
      const second = await attempt();
      expect(['ok', expect.stringContaining('ECONNREFUSED')]).toContainEqual(first);
      expect(second.rows[0]?.one).toBe(1);
    } finally {
      await db.close();
    }
  });

  it('a connection reset during the standby check fails that connect and the next host serves; the process does not crash', async () => {
    const proxy = await startResettingProxy('pg_is_in_recovery');
    const db = createDatabase({ url: withHosts(`${t.url}?target_session_attrs=read-write`, `127.0.0.1:${proxy.port},127.0.0.1:5432`), schema: t.schema, poolSize: 2 });
    try {
      const attempt = () => sql<{ one: number }>`select 1 as one`.execute(db.kysely);
      const first = await attempt().then(() => 'ok', (err: Error) => err.message);
      // Unheard, the client's 'error' event was an uncaught exception: vitest fails the run on it.
      expect(proxy.resets()).toBe(1);
      expect(first).not.toBe('ok');
      expect((await attempt()).rows[0]?.one).toBe(1);
    } finally {
      await db.close();
      await proxy.close();
    }
  });

  it('survives a primary that moves: writes fail while the old one is gone, then go to the next host, nothing written twice', async () => {
    const proxy = await startProxy();
    const db = createDatabase({ url: withHosts(`${t.url}?target_session_attrs=read-write`, `127.0.0.1:${proxy.port},127.0.0.1:5432`), schema: t.schema, poolSize: 3 });
    await sql`create table if not exists moves (n int primary key)`.execute(db.kysely);
    try {
      let failures = 0;
      let switchedAt: number | undefined;
      const closedAt = Date.now();
      let closed = false;
      for (let n = 0; n < 60; n++) {
        if (n === 20) {
          await proxy.close();
          closed = true;
        }
        for (;;) {
          try {
            await sql`insert into moves (n) values (${n}) on conflict do nothing`.execute(db.kysely);
            break;
          } catch {
            failures++;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        if (closed && switchedAt === undefined) switchedAt = Date.now();
      }
      const rows = await sql<{ c: string }>`select count(*) as c from moves`.execute(db.kysely);
      console.log(JSON.stringify({ failuresWhileMoving: failures, movedAfterMs: (switchedAt ?? NaN) - closedAt }));
      expect(Number(rows.rows[0]?.c)).toBe(60);
      // Only the statements on connections to the old primary fail (at most the pool's three), then each new connection goes to the second host.
      expect(failures).toBeGreaterThan(0);
      expect(failures).toBeLessThan(20);
    } finally {
      await db.close();
      await proxy.close().catch(() => undefined);
    }
  });
});
