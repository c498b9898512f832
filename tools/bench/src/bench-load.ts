/**
 * The load the end-to-end benchmarks put on Herald: users with one APNs and one FCM device each,
 * and jobs of one user (two device pushes) published with confirms. Factored out of main.ts's
 * seed()/publish() so bench:peer drives Herald the same way (main.ts can import these too).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { System } from '../../../test/support/system.ts';

/** Users `u<from>` … `u<from + users - 1>` of app `demo`, each with a random APNs and FCM token the sandbox accepts. */
export async function seedBenchDevices(sys: System, users: number, from = 0): Promise<void> {
  const now = new Date();
  for (let i = from; i < from + users; i += 5000) {
    const rows = [];
    for (let u = i; u < Math.min(from + users, i + 5000); u++) {
      for (const platform of ['apns', 'fcm'] as const) {
        const token = platform === 'apns' ? randomBytes(32).toString('hex') : `bench-${randomBytes(24).toString('base64url')}`;
        rows.push({ app: 'demo', platform, token, user_id: `u${u}`, registered_at: now, last_event_at: now });
      }
    }
    await sys.database.db.kysely.insertInto('devices').values(rows).execute();
  }
  // Statistics for the fresh rows, as a table that has lived has them (main.ts does the same): without,
  // PostgreSQL reads every device of the app through its timezone index for each user targeted.
  await sql`analyze devices`.execute(sys.database.db.kysely);
}

export interface PublishOptions {
  /** Jobs go to users `u<n % users>` for the n-th job (with usersPerJob k: `u<(n·k + i) % users>`, i < k). */
  users: number;
  /** Users a job names (1: `userId`, more: `userIds`); every user has two devices. */
  usersPerJob?: number;
  /** Checked before each job; counter.n is the number of jobs taken so far. */
  done: (counter: { n: number }) => boolean;
  /** Device pushes/s to offer (2 per user of a job); as fast as confirms allow when absent. */
  rate?: number;
  concurrency: number;
  counter: { n: number };
  /** Prefix of the job ids, so runs and rounds never share an idempotency key. */
  idPrefix: string;
  /** When set, publishing waits while more device pushes than this are published but not yet answered (see BacklogGate). */
  backlog?: BacklogGate;
}

/**
 * Keeps the load at what the system delivers: at most `maxOutstanding` device pushes published and
 * not yet answered by the sandbox. Without it a publisher as fast as confirms lets the job queue
 * grow all run long: the load generator, the broker and the demuxer then do work for pushes the
 * measured window never delivers (seen: 3,071 jobs/s demuxed, 6,142 pushes, while 2,100 were
 * delivered), and their CPU per delivered push counts it. `refresh` is called with the sandbox's
 * answered count (its total, streamed by `GET /stats/stream`) by whoever reads it.
 */
export class BacklogGate {
  private answered = 0;
  private waiters: Array<() => void> = [];

  constructor(readonly maxOutstanding: number) {}

  refresh(answered: number): void {
    this.answered = answered;
    const waiters = this.waiters;
    this.waiters = [];
    waiters.forEach((wake) => wake());
  }

  /** Resolves once `published` device pushes leave room under the bound (as of the latest refresh), or `stop()` holds at a refresh. */
  async room(published: number, stop: () => boolean): Promise<void> {
    while (published - this.answered >= this.maxOutstanding && !stop()) await new Promise<void>((wake) => this.waiters.push(wake));
  }

  /** Wakes every waiter for good (publishing is over). */
  open(): void {
    this.refresh(Number.POSITIVE_INFINITY);
  }
}

/** Publish jobs of `usersPerJob` users until `done`: at `rate` device pushes/s if given, else as fast as confirms (and `backlog`, if given) allow. */
export async function publishBenchJobs(sys: System, o: PublishOptions): Promise<void> {
  const started = Date.now();
  const perJob = o.usersPerJob ?? 1;
  // At a rate, each worker takes the next time slot before it waits, so jobs go one slot apart.
  // (Waiting for the slot of counter.n, every idle worker woke at the same slot and they published
  // together: bursts of 16 jobs, which the latency percentiles then measured.)
  let slots = 0;
  const worker = async (): Promise<void> => {
    while (!o.done(o.counter)) {
      if (o.rate !== undefined) {
        const due = started + ((slots++ * 2 * perJob) / o.rate) * 1000;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        if (o.done(o.counter)) break;
      }
      if (o.backlog !== undefined) {
        await o.backlog.room(o.counter.n * 2 * perJob, () => o.done(o.counter));
        if (o.done(o.counter)) break;
      }
      const n = o.counter.n++;
      await sys.client.publishPushJob({
        id: `${o.idPrefix}-${n}`,
        app: 'demo',
        ...(perJob === 1 ? { userId: `u${n % o.users}` } : { userIds: Array.from({ length: perJob }, (_, i) => `u${(n * perJob + i) % o.users}`) }),
        category: 'bench',
        content: { title: 'bench', data: { t: String(Date.now()) } },
      });
    }
  };
  await Promise.all(Array.from({ length: o.rate === undefined ? o.concurrency : Math.min(o.concurrency, 16) }, worker));
}
