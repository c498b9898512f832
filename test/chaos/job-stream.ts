import type { PushJobInput } from '@herald/contracts';
import { DEMO_APP, type System } from '../support/system.ts';
import type { ChaosDevice, ChaosJob, ChaosPlan } from './chaos-plan.ts';

/** A job as it was finally published (its first confirmed publish). */
export interface PublishedJob {
  job: ChaosJob;
  publishedAt: number;
  /** Due time (epoch ms) of a scheduled job. */
  dueAt?: number;
}

export interface ChurnRegistration {
  userId: string;
  token: string;
  publishedAt: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** A confirm that never comes (connection half-dead) must not stall the producer: give up after 5 s and publish again. */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no confirm within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * What a producer does while RabbitMQ restarts: publishing fails fast, so try again until it is
 * confirmed. Publishing a job twice is safe (its id is the idempotency key). Returns when it was confirmed.
 */
export async function publishWithRetry(what: string, publish: () => Promise<unknown>, deadlineMs = 180_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      await withTimeout(publish(), 5_000);
      return Date.now();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what} could not be published for ${deadlineMs} ms: ${String(err)}`, { cause: err });
      await sleep(250);
    }
  }
}

function jobInput(job: ChaosJob, now: number): PushJobInput {
  return {
    id: job.id,
    app: DEMO_APP.id,
    userIds: job.userIds,
    category: 'chaos',
    content: { title: 'Chaos', body: `job ${job.id}`, data: { jobId: job.id } },
    ...(job.delayMs !== undefined && { deliverAt: { at: new Date(now + job.delayMs).toISOString() } }),
    // Stamped when made, so a retry after a broker outage is the same job, judged as of then (one
    // that expires a millisecond on would be refused at the door if stamped at each try).
    acceptedAt: new Date(now).toISOString(),
    ...(job.expiresInMs !== undefined && { expiresAt: new Date(now + job.expiresInMs).toISOString() }),
  };
}

/** Publishes every job of the plan at its time after `startAt` (late ones as soon as the broker lets it). */
export async function runJobStream(sys: System, plan: ChaosPlan, startAt: number): Promise<Map<string, PublishedJob>> {
  const published = new Map<string, PublishedJob>();
  for (const job of plan.jobs) {
    await sleep(startAt + job.atMs - Date.now());
    const input = jobInput(job, Date.now());
    const publishedAt = await publishWithRetry(`job ${job.id}`, () => sys.client.publishPushJob(input));
    const dueAt = input.deliverAt !== undefined && 'at' in input.deliverAt ? Date.parse(input.deliverAt.at) : undefined;
    published.set(job.id, { job, publishedAt, ...(dueAt !== undefined && { dueAt }) });
  }
  return published;
}

/** Registrations of users no job targets, one every `churnEveryMs` until `stopped()`: the registrar's steady work. */
export async function runChurn(sys: System, plan: ChaosPlan, stopped: () => boolean, tokenFor: (n: number) => ChaosDevice): Promise<ChurnRegistration[]> {
  const done: ChurnRegistration[] = [];
  for (let n = 0; !stopped(); n++) {
    const device = tokenFor(n);
    const eventAt = new Date().toISOString();
    const registration = { kind: 'register' as const, app: DEMO_APP.id, platform: device.platform, token: device.token, userId: device.userId, eventAt };
    const publishedAt = await publishWithRetry(`registration ${device.userId}`, () => sys.client.publishRegistration(registration));
    done.push({ userId: device.userId, token: device.token, publishedAt });
    await sleep(plan.churnEveryMs);
  }
  return done;
}

/** Register the plan's devices through the registrar, many at a time, and wait until all are stored. */
export async function registerAll(sys: System, devices: readonly ChaosDevice[]): Promise<void> {
  const eventAt = new Date().toISOString();
  for (let i = 0; i < devices.length; i += 500) {
    await Promise.all(
      devices.slice(i, i + 500).map((d) =>
        publishWithRetry(`registration ${d.userId}`, () =>
          sys.client.publishRegistration({ kind: 'register', app: DEMO_APP.id, platform: d.platform, token: d.token, userId: d.userId, eventAt }),
        ),
      ),
    );
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    const row = await sys.database.db.kysely.selectFrom('devices').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst();
    if (Number(row?.n ?? 0) >= devices.length) return;
    if (Date.now() > deadline) throw new Error(`only ${row?.n ?? 0} of ${devices.length} devices registered after 120 s`);
    await sleep(250);
  }
}
