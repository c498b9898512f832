import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiUrl } from '../support/http-api.ts';
import type { ServiceProcess } from '../support/service-process.ts';
import { startExtraService, startSystem, type System } from '../support/system.ts';

/** This machine's first non-loopback IPv4 address (only addresses on this machine are ever dialled). */
function nonLoopbackIPv4(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('127.')) return a.address;
  }
  return undefined;
}

/** A plain TCP connect: 'connected', or the error code (ECONNREFUSED when nothing listens on that address). */
function tcpConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (outcome: string): void => {
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(3_000, () => done('timeout'));
    socket.once('connect', () => done('connected'));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

const portOf = (service: ServiceProcess, field: 'opsPort' | 'apiPort'): number => {
  const line = service.logs.findLast((l) => typeof l[field] === 'number');
  if (line === undefined) throw new Error(`${service.name} has not logged its ${field}`);
  return Number(line[field]);
};

const ADDRESS = nonLoopbackIPv4();
if (ADDRESS === undefined) {
  console.warn(
    'loopback-bind.spec.ts: skipped — this machine has no non-loopback IPv4 address to dial, so "not reachable from outside" cannot be shown here',
  );
}

describe.skipIf(ADDRESS === undefined)(`servers listen on loopback unless configured (dialling ${ADDRESS ?? '-'})`, () => {
  const address = ADDRESS ?? '';
  let sys: System;
  beforeAll(async () => {
    // Every service with its defaults: the harness sets ports (0) but no *_HOST.
    sys = await startSystem();
    expect(Object.keys(sys.env).filter((k) => k.endsWith('_HOST'))).toEqual([]);
  });
  afterAll(() => sys?.stop());

  it('every HTTP server (each ops port, the dashboard, the API, the sandbox) refuses a connection on the machine address and accepts one on 127.0.0.1', async () => {
    const ports: Array<[string, number]> = [...sys.services.values()].map((s) => [`${s.name} ops`, portOf(s, 'opsPort')]);
    ports.push(['api', portOf(sys.service('api'), 'apiPort')]);
    ports.push(
      ['sandbox apns', sys.sandbox.apnsPort],
      ['sandbox fcm', sys.sandbox.fcmPort],
      ['sandbox web', sys.sandbox.webPort],
      ['sandbox control', sys.sandbox.controlPort],
    );
    expect(ports.length).toBe(sys.services.size + 5);
    const seen = await Promise.all(
      ports.map(
        async ([name, port]) => [name, port, await tcpConnect(address, port), await tcpConnect('127.0.0.1', port)] as const,
      ),
    );
    for (const [name, port, outside, loopback] of seen) {
      expect(`${name} :${port} on ${address}: ${outside}`).toBe(`${name} :${port} on ${address}: ECONNREFUSED`);
      expect(`${name} :${port} on 127.0.0.1: ${loopback}`).toBe(`${name} :${port} on 127.0.0.1: connected`);
    }
  });

  it('HTTP_HOST=0.0.0.0 and API_HOST=0.0.0.0 make the ops server and the API reachable on the machine address', async () => {
    const monitor = await startExtraService(sys, 'monitor', { HTTP_HOST: '0.0.0.0' });
    const api = await startExtraService(sys, 'api', { HTTP_HOST: '0.0.0.0', API_HOST: '0.0.0.0' });
    for (const port of [portOf(monitor, 'opsPort'), portOf(api, 'opsPort'), portOf(api, 'apiPort')]) {
      expect(await tcpConnect(address, port)).toBe('connected');
    }
    // Reachable is not open: the dashboard still wants an operator key, /healthz stays open.
    const base = `http://${address}:${portOf(monitor, 'opsPort')}`;
    expect((await fetch(`${base}/api/status`)).status).toBe(401);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`http://${address}:${portOf(api, 'apiPort')}/healthz`)).status).toBe(200);
    // The first API (defaults) is still loopback only.
    expect(await tcpConnect(address, Number(new URL(apiUrl(sys)).port))).toBe('ECONNREFUSED');
  });

  it('a bind address that is not an IP (or localhost) stops the service at start-up, naming the variable', async () => {
    await expect(startExtraService(sys, 'registrar', { HTTP_HOST: 'every-interface' })).rejects.toThrow(/exited \(1\)/);
    const bad = sys.services.get('registrar#2');
    await waitFor('the config error in its output', async () =>
      (bad?.logs ?? []).some((l) => /HTTP_HOST must be an IP address to listen on/.test(String(l.msg))),
    );
  });
});
