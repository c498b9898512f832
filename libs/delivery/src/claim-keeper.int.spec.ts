import { randomUUID } from 'node:crypto';
import type { DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepClaims } from './claim-keeper.ts';
import { singleProvider } from './provider-pool.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'claim-keeper-spec', level: 'silent', format: 'json' });
const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('claimkeeper');
});
afterAll(() => t.drop());

function message(): { push: DevicePush; inbound: InboundMessage } {
  const push: DevicePush = { version: 1, pushId: randomUUID(), jobId: 'j', deviceId: 'spec-device', app: 'demo', platform: 'apns', token: 'a'.repeat(64),
    userId: 'u', content: { title: 'Hi' }, priority: 'high', acceptedAt: new Date().toISOString() };
  return { push, inbound: { body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: 'push.apns.send', redelivered: false, attempt: 1, queue: 'push.apns.send' } };
}

/** An APNs pusher handler for app demo whose provider and ledger the test gives. */
function handlerWith(deps: Pick<Parameters<typeof createPusherHandler>[0], 'providers' | 'ledger' | 'owner' | 'signal' | 'recordingStop'>) {
  return createPusherHandler({
    platform: 'apns',
    apps: { get: async (id) => ({ id, apnsTopic: 'com.herald.demo', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date() }) },
    publisher: { publish: async () => undefined, publishMany: async () => undefined },
    metrics: createPusherMetrics(new Registry()),
    logger,
    leaseMs: LEASE_MS,
    ...deps,
  });
}

describe('ledger claims of a batch at work', () => {
  it('a push whose answer and record take longer than a lease is not taken over by a redelivered copy meanwhile', async () => {
    const sent: string[] = [];
    const ledger = t.db.ledger;
    const handle = handlerWith({
      // The provider answers slowly, and the database records the outcome slowly after it: together well past one lease.
      providers: singleProvider({ platform: 'apns', send: async (push) => (sent.push(push.pushId), await sleep(LEASE_MS), { kind: 'delivered' }), close: async () => undefined }),
      ledger: { ...ledger, complete: async (entries) => (await sleep(2 * LEASE_MS), ledger.complete(entries)) },
      owner: 'slow-pusher',
    });
    const m = message();
    const handled = handle([m.inbound]);
    // Well past the lease of the first claim, while it is being recorded: another pusher's copy must wait.
    await sleep(2 * LEASE_MS);
    expect((await ledger.claim([m.push.pushId], 'other-pusher', LEASE_MS)).get(m.push.pushId)).toBe('in-flight');
    expect(await handled).toEqual([{ kind: 'ack' }]);
    expect((await ledger.claim([m.push.pushId], 'other-pusher', LEASE_MS)).get(m.push.pushId)).toBe('done');
    expect(sent).toEqual([m.push.pushId]);
  });

  it('a push sent as the pusher is told to stop is still recorded when the database answers within the shutdown, so it is not sent again', async () => {
    const sent: string[] = [];
    const ledger = t.db.ledger;
    const stopping = new AbortController();
    const recordingStop = new AbortController();
    let failures = 0;
    const handle = handlerWith({
      providers: singleProvider({ platform: 'apns', send: async (push) => (sent.push(push.pushId), { kind: 'delivered' }), close: async () => undefined }),
      // The first write meets a database restarting, and SIGTERM comes meanwhile (a rolling update during a failover).
      ledger: { ...ledger, complete: async (entries) => (failures++ === 0 ? (stopping.abort(), Promise.reject(new Error('Connection terminated unexpectedly'))) : ledger.complete(entries)) },
      owner: 'stopping-pusher',
      signal: stopping.signal,
      recordingStop: recordingStop.signal,
    });
    const m = message();
    expect(await handle([m.inbound])).toEqual([{ kind: 'ack' }]);
    expect(failures).toBe(2);
    expect((await ledger.claim([m.push.pushId], 'other-pusher', LEASE_MS)).get(m.push.pushId)).toBe('done');
    expect(sent).toEqual([m.push.pushId]);
  });

  it('claims are renewed only while their owner keeps them: once it stops (a killed or frozen process), they run out after a lease', async () => {
    const id = randomUUID();
    expect((await t.db.ledger.claim([id], 'owner-a', LEASE_MS)).get(id)).toBe('claimed');
    const stop = keepClaims(t.db.ledger, [id], 'owner-a', LEASE_MS, logger);
    await sleep(3 * LEASE_MS);
    expect((await t.db.ledger.claim([id], 'owner-b', LEASE_MS)).get(id)).toBe('in-flight');
    stop();
    await sleep(2 * LEASE_MS);
    expect((await t.db.ledger.claim([id], 'owner-b', LEASE_MS)).get(id)).toBe('claimed');
  });

  it('renews only its own claims that are still being sent', async () => {
    const [mine, done, theirs] = [randomUUID(), randomUUID(), randomUUID()];
    await t.db.ledger.claim([mine, done], 'owner-a', LEASE_MS);
    await t.db.ledger.claim([theirs], 'owner-b', LEASE_MS);
    await t.db.ledger.complete([{ pushId: done, outcome: 'delivered' }]);
    expect(await t.db.ledger.renew([mine, done, theirs], 'owner-a')).toBe(1);
  });
});
