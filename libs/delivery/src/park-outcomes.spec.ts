import { describe, expect, it } from 'vitest';
import type { PushOutcomeEntry } from '@herald/db';
import type { InboundMessage } from '@herald/messaging';
import { parkedPushOf, recordParkedPushes } from './park-outcomes.ts';

const pushId = '0f8fad5b-d9cb-469f-a165-70867728950e';
const message = (body: unknown): InboundMessage => ({
  body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  headers: {},
  routingKey: 'push.apns.send',
  redelivered: false,
  attempt: 3,
  queue: 'push.apns.send',
});

describe('parked pushes in their job status', () => {
  it('reads the push and job a parked body names, even when it broke its contract', () => {
    expect(
      parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', platform: 'apns', deviceId: '4', version: 99 }))),
    ).toEqual({ pushId, jobId: 'j', platform: 'apns', deviceId: '4' });
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', platform: 'web' })))).toEqual({ pushId, jobId: 'j', platform: 'web' });
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', platform: 'sms' })))).toEqual({ pushId, jobId: 'j' });
    expect(parkedPushOf(Buffer.from('not json'))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId: 'not-a-uuid', jobId: 'j' })))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId })))).toBeUndefined();
  });

  it('records a provider rejection as failed and every other park as parked, with code and reason', async () => {
    const written: PushOutcomeEntry[] = [];
    const record = recordParkedPushes({ recordOutcomes: async (e) => void written.push(...e) });
    const body = { pushId, jobId: 'j', platform: 'fcm', deviceId: '4' };
    await record({ message: message(body), code: 'provider-rejected', reason: 'INVALID_ARGUMENT' });
    await record({ message: message(body), code: 'retries-exhausted', reason: 'UNAVAILABLE' });
    await record({ message: message('garbage'), code: 'malformed-json', reason: 'x' });
    expect(written).toEqual([
      {
        pushId,
        jobId: 'j',
        platform: 'fcm',
        deviceId: '4',
        outcome: 'failed',
        code: 'provider-rejected',
        reason: 'INVALID_ARGUMENT',
      },
      { pushId, jobId: 'j', platform: 'fcm', deviceId: '4', outcome: 'parked', code: 'retries-exhausted', reason: 'UNAVAILABLE' },
    ]);
  });
});
