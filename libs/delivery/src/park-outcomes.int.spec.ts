import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '@herald/messaging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushesAlreadyDone } from './park-outcomes.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('park-done');
});
afterAll(() => t.drop());

const message = (body: string): InboundMessage => ({ body: Buffer.from(body), headers: {}, routingKey: 'push.apns.send', redelivered: true, attempt: 1, queue: 'push.apns.send' });
const push = (pushId: string) => message(JSON.stringify({ version: 1, pushId, jobId: 'job-1', deviceId: '7', app: 'default', platform: 'apns' }));

describe('the send queues\' alreadyDone (a push over the delivery limit)', () => {
  it('is true only of pushes the ledger holds as done, whatever the case of their id', async () => {
    const [sent, sending, unknown] = [randomUUID(), randomUUID(), randomUUID()];
    await t.db.ledger.claim([sent, sending], 'pusher-1', 60_000);
    await t.db.ledger.complete([{ pushId: sent, outcome: 'delivered' }]);
    const answer = await pushesAlreadyDone(t.db.ledger)([push(sent.toUpperCase()), push(sending), push(unknown), push(sent)]);
    expect(answer).toEqual([true, false, false, true]);
  });

  it('is false of a body that names no push id, without failing the rest', async () => {
    const [sent] = [randomUUID()];
    await t.db.ledger.claim([sent], 'pusher-1', 60_000);
    await t.db.ledger.complete([{ pushId: sent, outcome: 'delivered' }]);
    const answer = await pushesAlreadyDone(t.db.ledger)([message('not json'), push('not-a-uuid'), message('{"pushId":7}'), push(sent)]);
    expect(answer).toEqual([false, false, false, true]);
  });
});
