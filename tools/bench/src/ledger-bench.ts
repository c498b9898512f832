/**
 * `npm run bench:ledger`: PostgreSQL's CPU per device push for the two statements every pusher
 * batch sends (delivery-ledger.ts): claimLive (claim the batch, leaving out pushes whose device is
 * dead) and complete (mark them done with their job-status outcomes). On a schema of its own with
 * LEDGER_BENCH_DEVICES (40,000) registered devices, half APNs and half FCM tokens, one in a hundred
 * invalidated; batches of LEDGER_BENCH_BATCH (100) as prepared statements on one connection, every
 * device once a round, LEDGER_BENCH_ROUNDS (3) rounds. CPU is read from /proc: the connection's
 * backend for each statement, and the server's own processes (WAL writer, checkpointer, …) over
 * the round. Medians on the last line. Apart from the rest of Herald, so a change to either
 * statement shows here within a few percent, where `npm run bench` moves more than that from run
 * to run.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createSpecDatabase } from '../../../libs/db/src/spec-database.ts';
import { claimLiveStatement, completeStatement } from '../../../libs/db/src/delivery-ledger.ts';
import { queryPrepared } from '../../../libs/db/src/prepared.ts';
import { median } from './stats.ts';
import { cpuMs, postgresBackends } from './proc.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const DEVICES = env('LEDGER_BENCH_DEVICES', 40_000);
const BATCH = env('LEDGER_BENCH_BATCH', 100);
const ROUNDS = env('LEDGER_BENCH_ROUNDS', 3);
const LEASE_MS = 60_000;

const serverCpuMs = (port: number): number => postgresBackends(port).server.reduce((sum, pid) => sum + cpuMs(pid), 0);

interface Device {
  deviceId: string;
  platform: 'apns' | 'fcm';
  token: string;
  /** As the seed stores it (md5 of the token), so the claim finds each device still its user's. */
  userId: string;
}

const tokenFor = (platform: Device['platform']): string =>
  platform === 'apns' ? randomBytes(32).toString('hex') : `${randomBytes(16).toString('base64url')}:APA91b${randomBytes(105).toString('base64url')}`;

async function seed(pool: pg.Pool): Promise<Device[]> {
  await pool.query(`insert into apps (id) values ('bench')`);
  const devices: Device[] = [];
  for (let at = 0; at < DEVICES; at += 1000) {
    const part = Array.from({ length: Math.min(1000, DEVICES - at) }, (_, i) => ((at + i) % 2 === 0 ? 'apns' : 'fcm') as Device['platform']).map((platform) => ({ platform, token: tokenFor(platform) }));
    const { rows } = await pool.query<{ id: string; token: string }>(
      `insert into devices (app, platform, token, user_id, registered_at, last_event_at)
       select 'bench', p, t, md5(t), now(), now() from unnest($1::text[], $2::text[]) as x(p, t)
       returning id::text, token`,
      [part.map((d) => d.platform), part.map((d) => d.token)],
    );
    const ids = new Map(rows.map((r) => [r.token, r.id]));
    for (const d of part) devices.push({ ...d, deviceId: ids.get(d.token) as string, userId: createHash('md5').update(d.token).digest('hex') });
  }
  await pool.query(`update devices set invalidated_at = now(), invalidation_reason = 'bench' where id % 100 = 0`);
  await pool.query('analyze');
  return devices;
}

async function main(): Promise<void> {
  const spec = await createSpecDatabase('bench_ledger');
  // One connection, kept open, so its backend is the one whose CPU is read; statements run as the pushers run them (queryPrepared).
  const pool = new pg.Pool({ connectionString: spec.url, options: `-c search_path=${spec.schema}`, max: 1, idleTimeoutMillis: 0 });
  try {
    const port = Number(new URL(spec.url).port || 5432);
    const backend = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid as number;
    const devices = await seed(pool);
    console.log(`bench:ledger — ${DEVICES} devices (1% invalidated), batches of ${BATCH}, ${ROUNDS} rounds; PostgreSQL CPU µs per device push`);
    const results = { claimLive: [] as number[], complete: [] as number[], server: [] as number[] };
    for (let round = 1; round <= ROUNDS; round++) {
      let claimMs = 0;
      let completeMs = 0;
      const server0 = serverCpuMs(port);
      for (let at = 0; at < devices.length; at += BATCH) {
        const jobId = `bench-${round}-${at}`;
        const pushes = devices.slice(at, at + BATCH).map((d) => ({ ...d, pushId: randomUUID() }));
        const c0 = cpuMs(backend);
        await queryPrepared(spec.db.kysely, pool, claimLiveStatement(pushes, 'bench-pusher', LEASE_MS));
        const c1 = cpuMs(backend);
        const outcomes = new Map(pushes.map((p) => [p.pushId, 'delivered']));
        const statuses = pushes.map((p) => ({ pushId: p.pushId, jobId, outcome: 'delivered' as const, providerMessageId: randomUUID(), platform: p.platform, deviceId: p.deviceId }));
        await queryPrepared(spec.db.kysely, pool, completeStatement(outcomes, statuses));
        claimMs += c1 - c0;
        completeMs += cpuMs(backend) - c1;
      }
      const perPush = (ms: number): number => Math.round((ms * 10_000) / devices.length) / 10;
      const row = { claimLive: perPush(claimMs), complete: perPush(completeMs), server: perPush(serverCpuMs(port) - server0) };
      Object.entries(row).forEach(([k, v]) => results[k as keyof typeof results].push(v));
      console.log(`round ${round}: claimLive ${row.claimLive}, complete ${row.complete}, server processes ${row.server}`);
    }
    // To the rounds' own tenths (an even count of rounds averages its middle two).
    const tenths = (xs: number[]): number => Math.round(median(xs) * 10) / 10;
    const med = { claimLive: tenths(results.claimLive), complete: tenths(results.complete), server: tenths(results.server) };
    console.log(`medians of ${ROUNDS} rounds: claimLive ${med.claimLive}, complete ${med.complete}, server processes ${med.server}, total ${Math.round((med.claimLive + med.complete + med.server) * 10) / 10} µs per device push`);
  } finally {
    await pool.end();
    await spec.drop();
  }
}

await main();
