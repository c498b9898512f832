import { describe, expect, it } from 'vitest';
import type { JobPark } from '@herald/db';
import type { InboundMessage } from '@herald/messaging';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { countParkedJobs, createParkWrites, parkedJobOf, recordParkedFanoutTasks, recordParkedJobs } from './job-parks.ts';
import { createDemuxerMetrics } from './demuxer-metrics.ts';

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
    // A NUL byte in the id refused the park write, and every later retried park write waited behind it.
    expect(parkedJobOf(Buffer.from(JSON.stringify({ id: 'j\u0000', app: 'demo' })))).toBeUndefined();
    expect(parkedJobOf(Buffer.from(JSON.stringify({ id: 'j', app: 'd\u0000' })))).toBeUndefined();
    // An app no app has (published over AMQP) still shows the park on its job.
    expect(parkedJobOf(Buffer.from(JSON.stringify({ id: 'j', app: 'Demo' })))).toEqual({ id: 'j', app: 'Demo' });
  });

  it("leaves the status of the job whose id a parked job reused: that row is the other job's", async () => {
    const written: JobPark[] = [];
    const record = recordParkedJobs({ recordJobParks: async (e) => void written.push(...e) });
    const body = message(JSON.stringify({ id: 'j1', app: 'demo', content: {} }));
    await record({ message: body, code: 'job-id-reused', reason: 'job id "j1" was accepted before with other content' });
    await record({ message: body, code: 'job-id-conflict', reason: 'job id "j1" is already used by another app' });
    expect(written).toEqual([]);
  });
});

describe('parked fan-out chunk tasks in their job status', () => {
  it('marks the job of a parked chunk task with the code, the chunk and the reason; a task naming no job or chunk marks nothing', async () => {
    const written: Array<[string, number, string, string]> = [];
    const record = recordParkedFanoutTasks({ recordPark: async (...args) => void written.push(args) });
    await record({ message: message(JSON.stringify({ version: 1, jobId: 'j1', chunk: 3 })), code: 'delivery-limit', reason: 'delivered 5 times' });
    await record({ message: message(JSON.stringify({ jobId: 'j2', chunk: 'x' })), code: 'schema', reason: 'chunk: expected number' });
    await record({ message: message('{"jobId": '), code: 'malformed-json', reason: 'x' });
    await record({ message: message(JSON.stringify({ chunk: 1 })), code: 'schema', reason: 'x' });
    expect(written).toEqual([['j1', 3, 'delivery-limit', 'chunk 3: delivered 5 times']]);
  });
});

describe('park records while PostgreSQL refuses them', () => {
  const logger = createLogger({ service: 'job-parks-spec', level: 'silent' });

  it('keeps a park record PostgreSQL refused and writes it on a later try, the hook answering at once', async () => {
    const written: JobPark[] = [];
    let refusing = true;
    const jobs = {
      recordJobParks: async (e: readonly JobPark[]) => {
        if (refusing) throw new Error('the database system is in recovery mode');
        written.push(...e);
      },
    };
    const writes = createParkWrites(logger, 20);
    const record = recordParkedJobs(jobs, writes.write);
    await record({ message: message(JSON.stringify({ id: 'j1', app: 'demo' })), code: 'delivery-limit', reason: 'x' });
    await new Promise((r) => setTimeout(r, 60));
    expect(written).toEqual([]);
    refusing = false;
    await new Promise((r) => setTimeout(r, 60));
    expect(written).toEqual([{ id: 'j1', app: 'demo', code: 'delivery-limit', reason: 'x' }]);
    await writes.stop();
  });

  it('tries what it kept once more at stop, and keeps at most its bound, the newest', async () => {
    const done: string[] = [];
    let refusing = true;
    const writes = createParkWrites(logger, 60_000, 2);
    for (const name of ['a', 'b', 'c']) {
      await writes.write(async () => {
        if (refusing) throw new Error('ECONNREFUSED');
        done.push(name);
      });
    }
    refusing = false;
    await writes.stop();
    expect(done).toEqual(['b', 'c']);
  });
});

describe('parked jobs in herald_demuxer_jobs_total', () => {
  it("counts every park the consumer makes (a retry run out, the delivery limit, the demuxer's own), with the app of a valid job only", async () => {
    const registry = new Registry();
    const count = countParkedJobs(createDemuxerMetrics(registry), { get: async (id) => (id === 'demo' ? { id } : undefined) });
    const job = (app: string) => JSON.stringify({ id: 'j1', app, userId: 'u', category: 'c', content: { title: 'hi' } });
    await count({ message: message(job('demo')), code: 'retries-exhausted', reason: 'database error' });
    await count({ message: message(job('demo')), code: 'delivery-limit', reason: 'delivered 50 times' });
    await count({ message: message(job('nosuch')), code: 'unknown-app', reason: 'unknown app' });
    // A valid job of no app there is, parked at the delivery limit (a batch that crashed the demuxer): no series of its own.
    await count({ message: message(job('nosuch')), code: 'delivery-limit', reason: 'delivered 50 times' });
    await count({ message: message('{"id": "j3"'), code: 'malformed-json', reason: 'x' });
    const text = await registry.metrics();
    expect(text).toContain('herald_demuxer_jobs_total{outcome="parked",app="demo"} 2');
    expect(text).toContain('herald_demuxer_jobs_total{outcome="parked",app=""} 3');
    expect(text).not.toContain('nosuch');
  });
});

