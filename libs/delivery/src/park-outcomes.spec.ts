import { describe, expect, it } from 'vitest';
import type { PushOutcomeEntry } from '@herald/db';
import type { InboundMessage } from '@herald/messaging';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createJobOutcomeRecorder } from './job-outcomes.ts';
import { onPushParked, parkedPushOf } from './park-outcomes.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'park-outcomes-spec', level: 'silent' });
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
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', app: 'demo' })))).toEqual({ pushId, jobId: 'j', app: 'demo' });
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', app: 'Not An App Id!' })))).toEqual({ pushId, jobId: 'j' });
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', platform: 'web' })))).toEqual({ pushId, jobId: 'j', platform: 'web' });
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', platform: 'sms' })))).toEqual({ pushId, jobId: 'j' });
    expect(parkedPushOf(Buffer.from('not json'))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId: 'not-a-uuid', jobId: 'j' })))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId })))).toBeUndefined();
    // Nothing PostgreSQL cannot store: a NUL byte or an over-long job id names no job; such a device id is left out.
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j\u0000' })))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j'.repeat(201) })))).toBeUndefined();
    expect(parkedPushOf(Buffer.from(JSON.stringify({ pushId, jobId: 'j', deviceId: '4\u0000' })))).toEqual({ pushId, jobId: 'j' });
  });

  it('records a provider rejection as failed and every other park as parked, with code and reason, and counts each in herald_pushes_total', async () => {
    const written: PushOutcomeEntry[] = [];
    const registry = new Registry();
    const record = onPushParked('fcm', createPusherMetrics(registry), createJobOutcomeRecorder({ recordOutcomes: async (e) => void written.push(...e) }, logger));
    const body = { pushId, jobId: 'j', platform: 'fcm', deviceId: '4', app: 'demo' };
    await record({ message: message(body), code: 'provider-rejected', reason: 'INVALID_ARGUMENT' });
    await record({ message: message(body), code: 'retries-exhausted', reason: 'UNAVAILABLE' });
    await record({ message: message(body), code: 'delivery-limit', reason: 'delivered 51 times' });
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
      { pushId, jobId: 'j', platform: 'fcm', deviceId: '4', outcome: 'parked', code: 'delivery-limit', reason: 'delivered 51 times' },
    ]);
    // A provider outage ends in retries that run out: counted where HeraldPushesFailing looks.
    const counted = (await registry.getSingleMetric('herald_pushes_total')?.get())?.values.map((v) => [v.labels['app'], v.labels['outcome'], v.value]);
    expect(counted).toEqual(
      expect.arrayContaining([
        ['demo', 'failed', 1],
        ['demo', 'parked', 2],
        ['unknown', 'parked', 1],
      ]),
    );
    expect(counted).toHaveLength(3);
  });

  it('keeps a park outcome PostgreSQL refused and writes it with the next flush: the parked input is acked all the same', async () => {
    const written: PushOutcomeEntry[] = [];
    let refusing = true;
    const recorder = createJobOutcomeRecorder(
      {
        recordOutcomes: async (e) => {
          if (refusing) throw new Error('the database system is shutting down');
          written.push(...e);
        },
      },
      logger,
    );
    const record = onPushParked('apns', createPusherMetrics(new Registry()), recorder);
    await record({ message: message({ pushId, jobId: 'j', app: 'demo' }), code: 'app-disabled', reason: 'app "demo" is disabled' });
    expect(written).toEqual([]);
    refusing = false;
    await recorder.flush();
    expect(written).toEqual([{ pushId, jobId: 'j', outcome: 'parked', code: 'app-disabled', reason: 'app "demo" is disabled' }]);
  });

  it('counts parks without a job outcome store (JOB_STATUS_ENABLED off)', async () => {
    const registry = new Registry();
    await onPushParked('apns', createPusherMetrics(registry), undefined)({ message: message({ pushId, jobId: 'j', app: 'demo' }), code: 'retries-exhausted', reason: '503' });
    const values = (await registry.getSingleMetric('herald_pushes_total')?.get())?.values;
    expect(values?.map((v) => [v.labels['platform'], v.labels['outcome'], v.value])).toEqual([['apns', 'parked', 1]]);
  });
});
