import { startTcpProxyFor, type TcpProxy } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceProcess } from '../support/service-process.ts';
import { startSystem, type System } from '../support/system.ts';

/**
 * A deploy can replace a pod that is still starting. Node's default for SIGTERM ends a process at
 * once; a pusher already consuming would leave pushes it had sent unrecorded, to be sent again.
 */
describe('a SIGTERM while a service is still starting', () => {
  let sys: System;
  let proxy: TcpProxy;
  let early: ServiceProcess | undefined;
  beforeAll(async () => {
    sys = await startSystem({ only: [] });
    proxy = await startTcpProxyFor(sys.env['AMQP_URL'] ?? '');
  });
  afterAll(async () => {
    proxy?.thaw();
    await early?.stop('SIGKILL');
    await sys?.stop();
    await proxy?.close();
  });

  it('waits for the start-up to finish, then stops gracefully and exits 0', async () => {
    // RabbitMQ answers nothing yet: the registrar's start-up waits on its connection.
    proxy.freeze();
    early = new ServiceProcess('registrar-early', 'registrar', { ...sys.env, AMQP_URL: proxy.urlFor(sys.env['AMQP_URL'] ?? '') });
    const process = early;
    void process.start(60_000).catch(() => undefined);
    await process.waitForLog((l) => typeof l.msg === 'string' && l.msg.endsWith(' starting'), 30_000);
    const signalledAt = Date.now();
    const exited = process.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    expect(process.running).toBe(true);
    proxy.thaw();
    expect(await exited).toEqual({ code: 0, signal: null });
    const messages = process.logs.map((l) => l.msg);
    expect(messages).toContain('registrar started');
    expect(messages).toContain('shutdown complete');
    // The stop's bound counts from the SIGTERM (as an orchestrator's grace period does): the start-up's wait came off it.
    const bound = process.logs.find((l) => l.msg === 'stopping: the time left of the shutdown bound')?.['timeoutMs'];
    expect(bound).toBeLessThanOrEqual(Number(sys.env['SHUTDOWN_TIMEOUT_MS']) - 500);
    expect(bound).toBeGreaterThanOrEqual(Number(sys.env['SHUTDOWN_TIMEOUT_MS']) - (Date.now() - signalledAt));
  });
});
