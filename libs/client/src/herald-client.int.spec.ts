import { jobNotices } from '@herald/providers';
import { connectBroker, heraldTopology } from '@herald/messaging';
import { createLogger } from '@herald/logging';
import { createTestVhost, startTcpProxyFor, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { JobPublishFailedError, ValidationError, createHeraldClient } from './herald-client.ts';
// What a user of @herald/client imports to tell a rejected publish's meaning.
import { BrokerUnavailableError, PublishFailedError, PublishNotSentError } from './index.ts';

const logger = createLogger({ service: 'client-spec', level: 'silent', format: 'json' });
let vhost: TestVhost;
beforeAll(async () => {
  vhost = await createTestVhost('client-notices');
  const broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'client-spec' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await broker.close();
});
afterAll(() => vhost?.delete());

describe('the client library', () => {
  it("tells onNotices, once the job is published, what Herald will not deliver as asked (the HTTP API's notices), and nothing for a job it delivers as asked", async () => {
    const told: Array<{ id: string; notices: readonly string[] }> = [];
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger, onNotices: (job, notices) => told.push({ id: job.id, notices }) });
    try {
      // A local time without a date, expiring within two hours: the zones whose 09:00 comes later get nothing.
      const short = await client.publishPushJob({ id: 'short-ttl', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' }, ttl: 7200, deliverAt: { localTime: '09:00' } });
      await client.publishPushJob({ id: 'plain', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' } });
      const expected = jobNotices(short, new Date(short.acceptedAt ?? ''));
      expect(expected).toEqual([expect.stringMatching(/devices whose local 09:00 comes after that get nothing/)]);
      expect(told).toEqual([{ id: 'short-ttl', notices: expected }]);
    } finally {
      await client.close();
    }
  });

  it('rejects an unconfirmed job with the job as published, so a retry repeats its acceptedAt: the same input again is stamped anew, and refused once its expiry has passed', async () => {
    // A vhost without Herald's exchanges: the broker closes the channel, nothing is confirmed.
    const bare = await createTestVhost('client-unconfirmed');
    const unconfirmed = await createHeraldClient({ url: bare.amqpUrl, logger });
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    try {
      // Due 59 s ago, each push expiring a minute after: published within the second that is left.
      const input = { id: 'just-in-time', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' }, deliverAt: { at: new Date(Date.now() - 59_000).toISOString(), expiresAfter: 'PT1M' } };
      const err = await unconfirmed.publishPushJob(input).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(JobPublishFailedError);
      const job = (err as JobPublishFailedError).job;
      expect(job).toMatchObject({ ...input, acceptedAt: expect.any(String) as unknown });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await expect(client.publishPushJob(input)).rejects.toBeInstanceOf(ValidationError);
      expect(await client.publishPushJob(job)).toEqual(job);
    } finally {
      await unconfirmed.close();
      await client.close();
      await bare.delete();
    }
  });

  it('refuses a job that had expired when it was accepted (an expiresAt in the past), naming expiresAt, scheduled in the past too; a retry carrying the acceptedAt its first copy got before the expiry is published', async () => {
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    try {
      const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
      const input = { id: 'expired', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' }, expiresAt: hoursAgo(1) };
      const err = await client.publishPushJob(input).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues).toEqual([expect.stringMatching(/^expiresAt: the job had expired when it was accepted/)]);
      const scheduled = await client.publishPushJob({ ...input, id: 'expired-scheduled', deliverAt: { at: hoursAgo(2) } }).then(() => undefined, (e: unknown) => e);
      expect((scheduled as ValidationError).issues).toEqual([expect.stringMatching(/^expiresAt: /)]);
      const firstStamp = hoursAgo(2);
      expect(await client.publishPushJob({ ...input, id: 'retried', acceptedAt: firstStamp })).toMatchObject({ id: 'retried', acceptedAt: firstStamp });
    } finally {
      await client.close();
    }
  });

  // Before, a producer's clock two minutes fast refused it: its stamp came after the deadline, though the demuxer (acceptedAtOf) takes it as accepted at its own now.
  it('publishes a job whose expiresAt, a deadline another host set a minute ahead, has passed on a producer clock running two minutes fast', async () => {
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    const deadline = new Date(Date.now() + 60_000).toISOString();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000, shouldAdvanceTime: true });
    try {
      const input = { id: 'fast-clock', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' }, expiresAt: deadline };
      expect(await client.publishPushJob(input)).toMatchObject({ id: 'fast-clock', expiresAt: deadline });
      // A wrong year is refused all the same.
      const lastYear = new Date(Date.parse(deadline) - 365 * 86_400_000).toISOString();
      await expect(client.publishPushJob({ ...input, id: 'last-year', expiresAt: lastYear })).rejects.toBeInstanceOf(ValidationError);
    } finally {
      vi.useRealTimers();
      await client.close();
    }
  });

  it('rejects a call left waiting behind unconfirmed publishes past confirmTimeoutMs with PublishNotSentError, and the ones sent with JobPublishFailedError: both classes exported', async () => {
    const proxy = await startTcpProxyFor(vhost.amqpUrl);
    const client = await createHeraldClient({ url: proxy.urlFor(vhost.amqpUrl), logger, confirmTimeoutMs: 1_000 });
    const job = (id: string) => ({ id, app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi' } });
    try {
      await client.publishPushJob(job('stall-warm'));
      proxy.freeze();
      const first = client.publishPushJob(job('stall-first'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      // A round takes 500 calls: these go in the round after the first's (from 1 s), but the last would go in the one after that (from 2 s), past its own deadline.
      const rest = Array.from({ length: 501 }, (_, i) => client.publishPushJob(job(`stall-${i}`)));
      const settled = await Promise.allSettled([first, ...rest]);
      const errors = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error) : undefined));
      const last = errors.pop();
      for (const sent of errors) expect(sent).toBeInstanceOf(JobPublishFailedError);
      expect(errors[0]).toBeInstanceOf(PublishFailedError);
      expect(last).toBeInstanceOf(PublishNotSentError);
      expect(last).toBeInstanceOf(BrokerUnavailableError);
      expect(last).not.toBeInstanceOf(PublishFailedError);
      expect(last?.message).toMatch(/not sent: .*nothing of it will arrive/);
    } finally {
      proxy.thaw();
      await client.close();
      await proxy.close();
    }
  });

  it('names a field in each issue of a refused registration, whole when its message holds "; " (an APNs one carrying Web Push keys)', async () => {
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    try {
      const keys = { p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM', auth: 'tBHItJI5svbpez7KI4CCXg' };
      const registration = { kind: 'register' as const, app: 'demo', platform: 'apns' as const, token: 'ab'.repeat(32), userId: 'u', eventAt: new Date().toISOString(), keys };
      const err = await client.publishRegistration(registration).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues).toEqual(['keys: keys belong to a Web Push subscription; an APNs registration has none']);
    } finally {
      await client.close();
    }
  });

  it('refuses a change over maxChangeBytes (64 KiB by default, of its JSON or its diff), as the HTTP API answers it 413, and publishes one within it', async () => {
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    const small = await createHeraldClient({ url: vhost.amqpUrl, logger, maxChangeBytes: 2_048 });
    try {
      const change = (id: string, bytes: number) => ({ id, resource: { type: 'campaign', id: 'c-1' }, old: null, new: { creative: 'x'.repeat(bytes) } });
      const err = await client.publishChange(change('huge', 70_000)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues).toEqual([expect.stringMatching(/^new: the change event is \d+ bytes of JSON and its diff \d+, over the limit of 65536/)]);
      // 100 fields of a created resource: the event is under 2 KiB, its diff (each {old: null, new}) is not.
      const fields = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, i]));
      expect(Buffer.byteLength(JSON.stringify({ id: 'many', resource: { type: 'campaign', id: 'c-1' }, old: null, new: fields }))).toBeLessThan(2_048);
      await expect(small.publishChange({ id: 'many', resource: { type: 'campaign', id: 'c-1' }, old: null, new: fields })).rejects.toBeInstanceOf(ValidationError);
      expect(await client.publishChange(change('fits', 1_000))).toMatchObject({ id: 'fits' });
    } finally {
      await Promise.all([client.close(), small.close()]);
    }
  });

  it('refuses a new job whose content its doors refuse (a data key collapse_key, which Android apps never see), naming the field', async () => {
    const client = await createHeraldClient({ url: vhost.amqpUrl, logger });
    try {
      const err = await client.publishPushJob({ id: 'reserved-key', app: 'demo', userId: 'u', category: 'news', content: { title: 'Hi', data: { collapse_key: 'x' } } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues).toEqual([expect.stringMatching(/^content\.data\.collapse_key: is reserved/)]);
    } finally {
      await client.close();
    }
  });
});
