import { derivePushId } from '@herald/contracts';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, deviceIdOf, job, pushPackSize, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { delivered, injectFault } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';

const DEVICES = 400;
/** Device pushes a send-queue message carries in this run. */
const PACK = pushPackSize();
/** Pushes the pusher holds unacknowledged at most: far fewer than DEVICES. */
const HELD = 50;
/**
 * Its send window (PUSHER_PREFETCH, counted in pushes): the most it has sent or is sending and not yet
 * recorded in the ledger at any moment, so the most a SIGKILL can leave sent but unrecorded.
 */
const WINDOW = Math.ceil(HELD / PACK);
/** How long the sandbox holds its answer to one push of the SIGKILL test: the kill lands while the pusher waits for it. */
const HELD_ANSWER_MS = 4_000;

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

/** The ledger's state of each device's push of job `jobId`, by token (absent: not claimed yet). */
async function ledgerStates(sys: System, jobId: string, devices: readonly Device[]): Promise<Map<string, string>> {
  const db = sys.database.db.kysely;
  const rows = await db.selectFrom('devices').select(['id', 'token']).where('token', 'in', devices.map((d) => d.token)).execute();
  const tokenOf = new Map(rows.map((r) => [derivePushId(jobId, String(r.id)), r.token]));
  const ledger = await db.selectFrom('delivery_ledger').select(['push_id', 'state']).where('push_id', 'in', [...tokenOf.keys()]).execute();
  return new Map(ledger.map((l) => [tokenOf.get(l.push_id) ?? l.push_id, l.state]));
}

/**
 * Wait until every push of the job is recorded done in the ledger: then no copy of one is left to
 * come back (one deferred as in flight returns only after the killed pusher's lease and its defer,
 * seconds after the last token's first delivery), and what the sandbox holds is final.
 */
async function allRecorded(sys: System, jobId: string, devices: readonly Device[]): Promise<void> {
  await waitFor('every push recorded done in the ledger', async () => {
    const states = await ledgerStates(sys, jobId, devices);
    return states.size === devices.length && [...states.values()].every((s) => s === 'done');
  }, { timeoutMs: 30_000, intervalMs: 200 });
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
    sys = await startSystem({ env: { LEDGER_LEASE_MS: '3000', PUSHER_PREFETCH: String(WINDOW), PUSHER_BATCH_SIZE: '10' } });
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
    const sent = await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId) }));
    await waitFor('some deliveries', async () => (await deliveries(sys, devices)).size >= 20);
    const exit = await pusher.stop('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    const atStop = await deliveries(sys, devices);
    expect(atStop.size).toBeLessThan(DEVICES);
    await pusher.start();
    await waitFor('all deliveries', async () => (await deliveries(sys, devices)).size === DEVICES, { timeoutMs: 60_000 });
    await allRecorded(sys, sent.id, devices);
    const counts = await deliveries(sys, devices);
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
  });

  it('SIGKILL loses nothing: the restarted pusher gets the unacknowledged pushes again, and sends none the ledger had recorded', async () => {
    const devices = manyDevices('kill');
    await registerDevices(sys, devices);
    const pusher = sys.service('apns-pusher');
    // The sandbox holds its answer to one push (faults match in the order added): the pusher is
    // killed while it waits for it, so the messages it holds unacknowledged (that push's pack, its
    // batch) carry pushes it has already recorded done, whose copies come back to its successor.
    const slow = devices[DEVICES / 10] as Device;
    await fetch(`${sys.sandbox.settings.control.url}/faults`, { method: 'DELETE' });
    await injectFault(sys.sandbox, { platform: 'apns', token: slow.token, delayMs: HELD_ANSWER_MS, times: 1 });
    await injectFault(sys.sandbox, { platform: 'apns', fraction: 1, delayMs: 20 });
    const sent = await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId) }));
    const slowPush = derivePushId(sent.id, await deviceIdOf(sys, slow));
    const stateOf = async (pushId: string) =>
      (await sys.database.db.kysely.selectFrom('delivery_ledger').select('state').where('push_id', '=', pushId).executeTakeFirst())?.state;
    await waitFor('the slow push claimed', async () => (await stateOf(slowPush)) === 'sending');
    // Its request reaches the sandbox and the pushes beside it are answered and recorded meanwhile.
    await new Promise((r) => setTimeout(r, 300));
    const exit = await pusher.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    // Recorded delivered before the kill: a copy of one that comes back must be acked unsent.
    const doneAtKill = [...(await ledgerStates(sys, sent.id, devices))].filter(([, state]) => state === 'done').map(([token]) => token);
    expect(doneAtKill.length).toBeGreaterThan(0);
    expect((await deliveries(sys, devices)).size).toBeLessThan(DEVICES);
    await pusher.start();
    await waitFor('all deliveries', async () => (await deliveries(sys, devices)).size === DEVICES, { timeoutMs: 60_000 });
    await allRecorded(sys, sent.id, devices);
    const counts = await deliveries(sys, devices);
    expect(doneAtKill.filter((token) => counts.get(token) !== 1), 'pushes recorded done before the kill, sent again').toEqual([]);
    // Such copies did come back (the check above saw some), and were acked as duplicates.
    expect(await metric(pusher, 'herald_pushes_total', { outcome: 'duplicate' })).toBeGreaterThan(0);
    // Only pushes the provider had accepted but the ledger had not yet recorded at the kill (the
    // slow one among them) can repeat, once each: at most the pusher's send window, not all it held.
    const repeats = [...counts.values()].filter((n) => n > 1);
    expect(repeats.length).toBeLessThanOrEqual(WINDOW);
    expect(repeats.filter((n) => n > 2)).toEqual([]);
  });
});
