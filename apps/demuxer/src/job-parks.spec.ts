import { describe, expect, it } from 'vitest';
import type { JobPark } from '@herald/db';
import type { InboundMessage } from '@herald/messaging';
import { parkedJobOf, recordParkedJobs } from './job-parks.ts';

const message = (body: string): InboundMessage => ({
  body: Buffer.from(body),
  headers: {},
  routingKey: 'push.jobs',
  redelivered: true,
  attempt: 1,
  queue: 'push.jobs',
});

describe('parked jobs in their status', () => {
  it('shows a parked job that names its id and app, whatever else is wrong with it', async () => {
    const written: JobPark[] = [];
    const record = recordParkedJobs({ recordJobParks: async (e) => void written.push(...e) });
    await record({
      message: message(JSON.stringify({ id: 'j1', app: 'nosuch', content: 42 })),
      code: 'schema',
      reason: 'content: expected object',
    });
    await record({ message: message('{"id": "j2"'), code: 'malformed-json', reason: 'x' });
    await record({ message: message(JSON.stringify({ id: '', app: 'demo' })), code: 'schema', reason: 'x' });
    expect(written).toEqual([{ id: 'j1', app: 'nosuch', code: 'schema', reason: 'content: expected object' }]);
    expect(parkedJobOf(Buffer.from(JSON.stringify({ id: 'j', app: 'demo' })))).toEqual({ id: 'j', app: 'demo' });
  });
});
