import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '@herald/testing';
import { PostgresProcesses } from './proc-sockets.ts';

const url = new URL(TEST_DATABASE_URL);
const port = Number(url.port || 5432);
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function connection(applicationName: string): Promise<{ client: pg.Client; backend: number }> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, application_name: applicationName });
  await client.connect();
  closers.push(() => client.end());
  const backend = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid as number;
  return { client, backend };
}

describe("the peer bench's PostgreSQL meter", () => {
  it("counts the backends of its clients' connections, those opened after it first looked too, and no other client's", async () => {
    const tag = `proc-sockets-${process.pid}-${Date.now()}`;
    const first = await connection(tag);
    const postgres = new PostgresProcesses(port);
    expect(postgres.backendsOf(() => [process.pid])).toContain(first.backend);

    // Another process's connection (psql, held open by pg_sleep) is someone else's backend.
    const other = spawn('psql', [TEST_DATABASE_URL, '-c', 'select pg_sleep(30)'], { env: { ...process.env, PGAPPNAME: `${tag}-other` }, stdio: 'ignore' });
    closers.push(async () => void other.kill());
    let otherBackend: number | undefined;
    for (let i = 0; i < 100 && otherBackend === undefined; i++) {
      const r = await first.client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [`${tag}-other`]);
      otherBackend = r.rows[0]?.pid;
      if (otherBackend === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(otherBackend).toBeDefined();

    const second = await connection(tag);
    const ours = postgres.backendsOf(() => [process.pid]);
    expect(ours).toEqual(expect.arrayContaining([first.backend, second.backend]));
    expect(ours).not.toContain(otherBackend);
    expect(postgres.server()).not.toContain(otherBackend);
  });

  it("lists the server's own processes (checkpointer, WAL writer, …) and none of the backends", async () => {
    const { client, backend } = await connection(`proc-sockets-${process.pid}`);
    const own = await client.query<{ pid: number }>("select pid from pg_stat_activity where backend_type in ('checkpointer', 'walwriter', 'background writer')");
    const server = new PostgresProcesses(port).server();
    expect(own.rows.length).toBeGreaterThan(0);
    expect(server).toEqual(expect.arrayContaining(own.rows.map((r) => r.pid)));
    expect(server).not.toContain(backend);
  });
});
