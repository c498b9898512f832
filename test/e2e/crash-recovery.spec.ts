import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, job, pushPackSize, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { delivered, injectFault } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';

const DEVICES = 400;
/** Device pushes a send-queue message carries in this run. */
const PACK = pushPackSize();
/** Pushes the pusher holds unacknowledged at most: far fewer than DEVICES. */
const HELD = 50;

/** Count sandbox deliveries per token for a set of devices. */
async function deliveries(sys: System, devices: readonly Device[]): Promise<Map<string, number>> {
  const tokens = new Set(devices.map((d) => d.token));
  const counts = new Map<string, number>();
  for (const r of await delivered(sys.sandbox, { platform: 'apns' })) {
    const token = r.path.slice('/3/device/'.length);
    if (tokens.has(token)) counts.set(token, (counts.get(token) ?? 0) + 1);
  }
  return counts;
}

function manyDevices(label: string): Device[] {
  return Array.from({ length: DEVICES }, (_, i) => ({ userId: uniqueUser(`${label}${i}`), platform: 'apns' as const, token: apnsToken() }));
}

describe('a pusher that is stopped mid-stream loses nothing', () => {
  let sys: System;
  beforeAll(async () => {
    // Short lease so a killed pusher's claims expire quickly; the sandbox answers slowly so work is
    // in flight, and a limit of 100/s makes the 400 pushes take about 4 s, so the stop lands
    // mid-stream. The pusher holds at most HELD pushes, however many a message carries
    // (PUSH_PACK_SIZE, ADR 0016): with a prefetch of 50 messages of ten, it held all 400, and they
    // were delivered before the SIGTERM landed.
    sys = await startSystem({ env: { LEDGER_LEASE_MS: '3000', PUSHER_PREFETCH: String(Math.ceil(HELD / PACK)), PUSHER_BATCH_SIZE: '10' } });
    await sys.database.db.rateLimits.set({ platform: 'apns' }, 100);
    await injectFault(sys.sandbox, { platform: 'apns', fraction: 1, delayMs: 20 });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('SIGTERM finishes in-flight pushes and exits 0; the restarted pusher sends the rest exactly once', async () => {
    const devices = manyDevices('term');
    await registerDevices(sys, devices);
    const pusher = sys.service('apns-pusher');
    await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId) }));
    await waitFor('some deliveries', async () => (await deliveries(sys, devices)).size >= 20);
    const exit = await pusher.stop('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    const atStop = await deliveries(sys, devices);
    expect(atStop.size).toBeLessThan(DEVICES);
    await pusher.start();
    await waitFor('all deliveries', async () => (await deliveries(sys, devices)).size === DEVICES, { timeoutMs: 60_000 });
    const counts = await deliveries(sys, devices);
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
  });

  it('SIGKILL loses nothing: the restarted pusher gets the unacknowledged pushes again', async () => {
    const devices = manyDevices('kill');
    await registerDevices(sys, devices);
    const pusher = sys.service('apns-pusher');
    await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId) }));
    await waitFor('some deliveries', async () => (await deliveries(sys, devices)).size >= 20);
    const exit = await pusher.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    expect((await deliveries(sys, devices)).size).toBeLessThan(DEVICES);
    await pusher.start();
    await waitFor('all deliveries', async () => (await deliveries(sys, devices)).size === DEVICES, { timeoutMs: 60_000 });
    const counts = await deliveries(sys, devices);
    // Only pushes sent but not yet recorded in the ledger at the kill can repeat: at most the
    // pushes in the pusher's unacknowledged window.
    const duplicates = [...counts.values()].filter((n) => n > 1).length;
    expect(duplicates).toBeLessThanOrEqual(HELD);
  });
});
