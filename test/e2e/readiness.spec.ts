import { randomBytes } from 'node:crypto';
import { createDatabase, dropSchemaAndClose } from '@herald/db';
import { managementRequest, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, opsUrl } from '../support/metrics.ts';
import { ServiceProcess } from '../support/service-process.ts';
import { startSystem, type System } from '../support/system.ts';

interface Probe {
  status: number;
  body: { ok: boolean; problems?: string[] };
}

async function probe(service: ServiceProcess, path: '/healthz' | '/readyz'): Promise<Probe> {
  const res = await fetch(`${opsUrl(service)}${path}`);
  return { status: res.status, body: (await res.json()) as Probe['body'] };
}

/**
 * /healthz says the process lives (Kubernetes' liveness: restart it when not); /readyz says it can
 * do its work now (readiness: RabbitMQ connected, every consumer subscribed), with what is
 * missing, and `herald_ready` says the same to Prometheus.
 */
describe('readiness: /readyz and herald_ready follow what a service has of RabbitMQ', () => {
  let sys: System;
  const mgmt = (method: string, path: string, body?: unknown) => managementRequest(method, path, body, sys.managementApi);
  const permissions = () => `/permissions/${encodeURIComponent(sys.vhost.name)}/guest`;

  /** The server-side name of the connection a service named `connectionName`, once it is open. */
  const serverName = (connectionName: string): Promise<string> =>
    waitFor(`connection ${connectionName}`, async () => {
      const open = await (await mgmt('GET', `/vhosts/${encodeURIComponent(sys.vhost.name)}/connections`)).json<Array<{ name: string; client_properties?: { connection_name?: string } }>>();
      return open.find((c) => c.client_properties?.connection_name === connectionName)?.name;
    }, { timeoutMs: 30_000 });
  const forceClose = async (name: string): Promise<void> => expect((await mgmt('DELETE', `/connections/${encodeURIComponent(name)}`)).ok).toBe(true);

  beforeAll(async () => {
    sys = await startSystem({ only: ['registrar', 'monitor'] });
  });
  afterAll(async () => {
    await mgmt('PUT', permissions(), { configure: '.*', write: '.*', read: '.*' }).catch(() => undefined);
    await sys?.stop();
  });

  it('a started service is ready; one whose RabbitMQ connection cannot be re-opened is not, naming it, and is ready again once it is back; it stays live throughout', async () => {
    const registrar = sys.service('registrar');
    const monitor = sys.service('monitor');
    for (const s of [registrar, monitor]) {
      expect(await probe(s, '/readyz'), s.name).toEqual({ status: 200, body: { ok: true } });
      expect(await metric(s, 'herald_ready'), s.name).toBe(1);
    }

    // Both open (the monitor connects after its first poll); then, without permission on the vhost,
    // neither can be re-opened.
    const opened = await Promise.all([serverName('registrar.consume'), serverName('herald-monitor')]);
    await mgmt('DELETE', permissions());
    for (const name of opened) await forceClose(name);
    const down = await waitFor('the registrar unready', async () => {
      const p = await probe(registrar, '/readyz');
      return p.status === 503 ? p : undefined;
    });
    expect(down.body.ok).toBe(false);
    expect(down.body.problems).toContainEqual(expect.stringMatching(/^RabbitMQ connection "registrar\.consume" lost at .*Z; reconnecting$/));
    expect(await metric(registrar, 'herald_ready')).toBe(0);
    expect(await probe(registrar, '/healthz')).toEqual({ status: 200, body: { ok: true } });
    // The monitor reports what it cannot reach as alarms: it stays ready, its dashboard up.
    expect(await probe(monitor, '/readyz')).toEqual({ status: 200, body: { ok: true } });

    await mgmt('PUT', permissions(), { configure: '.*', write: '.*', read: '.*' });
    await waitFor('the registrar ready again', async () => (await probe(registrar, '/readyz')).status === 200, { timeoutMs: 30_000 });
    expect(await metric(registrar, 'herald_ready')).toBe(1);
  });

  it('a service started before prepare (its schema lacks the newest migration) waits, not ready, saying why, and starts once the migrations have run', async () => {
    const schema = `herald_unprepared_${randomBytes(4).toString('hex')}`;
    const gated = new ServiceProcess('registrar#unprepared', 'registrar', { ...sys.env, DATABASE_SCHEMA: schema });
    sys.services.set(gated.name, gated);
    const db = createDatabase({ url: sys.env['DATABASE_URL'] ?? '', schema });
    try {
      const started = gated.start(60_000);
      await gated.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('the schema lacks a migration this release needs'), 30_000);
      expect(await probe(gated, '/readyz')).toEqual({ status: 503, body: { ok: false, problems: [expect.stringMatching(new RegExp(`^the schema ${schema} lacks migration \\d{4}_\\w+: waiting for prepare$`))] } });
      // Alive meanwhile: an orchestrator's start-up probe does not restart it in a loop.
      expect((await probe(gated, '/healthz')).status).toBe(200);
      await db.migrate();
      await started;
      expect(await probe(gated, '/readyz')).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await gated.stop();
      await dropSchemaAndClose(db);
    }
  });

  it('a service waiting for prepare stops at once on SIGTERM, cleanly', async () => {
    const schema = `herald_unprepared_${randomBytes(4).toString('hex')}`;
    const gated = new ServiceProcess('registrar#stopped-waiting', 'registrar', { ...sys.env, DATABASE_SCHEMA: schema });
    sys.services.set(gated.name, gated);
    const started = gated.start(60_000).catch(() => undefined);
    await gated.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('the schema lacks a migration this release needs'), 30_000);
    const asked = Date.now();
    const exit = await gated.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    // Not the shutdown bound's guard (SHUTDOWN_TIMEOUT_MS, then exit 1).
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(gated.logs.some((l) => l.msg === 'stopped while starting')).toBe(true);
    await started;
  });
});
