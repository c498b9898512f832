import { randomUUID } from 'node:crypto';
import { Queues } from '@herald/contracts';
import { peekMessages } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

const DAY = 86_400_000;
const daysAhead = (d: number) => new Date(Date.now() + d * DAY).toISOString();

/**
 * SCHEDULE_HORIZON_DAYS set for the system (as infra/k8s's ConfigMap sets a variable for every
 * service) is the horizon of the doors too, not only of the demuxer: a job scheduled past it is
 * refused where it is published, never answered 202 and parked bad-schedule after.
 */
describe('SCHEDULE_HORIZON_DAYS at the doors', () => {
  let sys: System;
  let key: string;
  const published = async () => (await peekMessages(sys.vhost.name, Queues.jobs, 5000)).length;
  const herald = (...args: string[]) => runHerald({ ...sys.env, LOG_LEVEL: 'warn' }, ...args);

  beforeAll(async () => {
    // Only the API runs: what the doors publish stays in push.jobs to be counted.
    sys = await startSystem({ only: ['api'], env: { ...API_TEST_ENV, SCHEDULE_HORIZON_DAYS: '30' } });
    key = await teamKey(sys, 'team-demo', [DEMO_APP.id]);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  const job = (deliverAt: string) => ({ id: randomUUID(), app: DEMO_APP.id, userId: 'u1', category: 'social', content: { title: 'hi' }, deliverAt: { at: deliverAt } });

  it('the HTTP API answers 400 to a job scheduled past the horizon (the default would take it), 202 to one within it', async () => {
    const before = await published();
    const far = await call<{ error: { code: string; message: string } }>(sys, 'POST', '/v1/jobs', { key, body: job(daysAhead(60)) });
    expect(far.status, JSON.stringify(far.body)).toBe(400);
    expect(far.body.error.message).toMatch(/^deliverAt: .*more than 30 days ahead/);
    expect(await published()).toBe(before);
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: job(daysAhead(20)) })).status).toBe(202);
    expect(await published()).toBe(before + 1);
  });

  it('the CLI refuses a job scheduled past the horizon before publishing it, and sends one within it', async () => {
    const before = await published();
    const far = await herald('send', '--app', DEMO_APP.id, '--user', 'u1', '--title', 'hi', '--deliver-at', daysAhead(60));
    expect(far.code).not.toBe(0);
    expect(far.stderr).toMatch(/^herald: .*deliverAt: .*more than 30 days ahead/);
    expect(await published()).toBe(before);
    const near = await herald('send', '--app', DEMO_APP.id, '--user', 'u1', '--title', 'hi', '--deliver-at', daysAhead(20));
    expect(near.code, near.stderr).toBe(0);
    expect(await published()).toBe(before + 1);
  });
});
