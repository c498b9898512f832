/**
 * `npm run bench:doors`: CPU microseconds a message of the checks Herald's own code makes at its
 * doors, apart from any I/O: the demuxer's per job (decoding a PushJob, its providers' rules, its
 * content digest) and a pusher's per push (decoding a DevicePush, the provider's rules). These are
 * the largest pieces of Herald's own code in the services' CPU profiles (docs/benchmarks.md), and
 * a change to them moves `npm run bench` by less than its noise, so they are measured here.
 *
 * Each round runs the demuxer's cases in a fresh process and the pushers' in another, as the
 * services do (a case's figure moves with what ran before it in the process): one tree's code,
 * warmed up, then DOORS_BENCH_ITERATIONS of each case (default 50,000), timed three times, the
 * middle one counting. With
 * `DOORS_BENCH_BASE=<dir>`, a worktree of another commit (`bash tools/bench/worktree.sh <commit>
 * <dir>`), rounds alternate between its code and this checkout's, which goes first changing every
 * round, and the last lines give this checkout's median over the base's, case by case.
 * DOORS_BENCH_ROUNDS (default 5) rounds a tree; DOORS_BENCH_ONLY=<text> measures only the cases
 * whose names hold it.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import { alternating, median } from './stats.ts';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The messages: a bench job of one user and of 50, and the pushes the demuxer makes of the first. */
async function measure(tree: string, service: string, iterations: number): Promise<Record<string, number>> {
  const c = await import(resolve(tree, 'libs/contracts/src/index.ts'));
  const p = await import(resolve(tree, 'libs/providers/src/index.ts'));
  const now = new Date();
  const content = { title: 'bench', data: { t: String(now.getTime()) } };
  const oneUser = Buffer.from(JSON.stringify({ id: 'bench-run-12345', app: 'demo', userId: 'u123', category: 'bench', content }));
  const users = Array.from({ length: 50 }, (_, i) => `user-${i}`);
  const fiftyUsers = Buffer.from(
    JSON.stringify({ id: 'bench-run-12345', app: 'demo', userIds: users, category: 'bench', content }),
  );
  const job = c.decodeWith(c.PushJob, oneUser).value;
  const push = (platform: 'apns' | 'fcm') => ({
    version: 1,
    pushId: c.derivePushId(job.id, '12345'),
    jobId: job.id,
    deviceId: '12345',
    app: 'demo',
    platform,
    token: platform === 'apns' ? 'ab'.repeat(32) : `bench-1:APA91b${'x'.repeat(140)}`,
    userId: 'u123',
    category: 'bench',
    askedAt: now.toISOString(),
    content,
    priority: 'high',
    acceptedAt: now.toISOString(),
  });
  const apnsBody = Buffer.from(JSON.stringify(push('apns')));
  const fcmBody = Buffer.from(JSON.stringify(push('fcm')));
  const apns = c.decodeWith(c.DevicePush, apnsBody).value;
  const fcm = c.decodeWith(c.DevicePush, fcmBody).value;
  const cases: Record<string, () => unknown> = {
    'demuxer: decode a job of 1 user': () => c.decodeWith(c.PushJob, oneUser),
    'demuxer: decode a job of 50 users': () => c.decodeWith(c.PushJob, fiftyUsers),
    "demuxer: a job's APNs and FCM rules": () => p.jobConformanceIssues(job, { web: false }, now),
    "demuxer: a job's content digest": () => c.jobContentHash(job),
    'pusher: decode an APNs push': () => c.decodeWith(c.DevicePush, apnsBody),
    'pusher: decode an FCM push': () => c.decodeWith(c.DevicePush, fcmBody),
    "pusher: an APNs push's rules": () => p.pushProblem(apns, 'com.herald.demo', now),
    "pusher: an FCM push's rules": () => p.pushProblem(fcm, 'com.herald.demo', now),
  };
  const timed = (f: () => unknown, n: number): number => {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) f();
    const used = process.cpuUsage(start);
    return (used.user + used.system) / n;
  };
  const result: Record<string, number> = {};
  const only = process.env['DOORS_BENCH_ONLY'];
  for (const [name, f] of Object.entries(cases)) {
    if (!name.startsWith(`${service}:`) || (only !== undefined && !name.includes(only))) continue;
    const first = f() as { ok?: boolean; reason?: string } | unknown[] | undefined;
    // A case that fails its check measures the refusal, not the door: say so rather than time it.
    if ((first as { ok?: boolean })?.ok === false || (Array.isArray(first) && first.length > 0) || typeof first === 'string') {
      throw new Error(`${name}: the bench's message is refused (${JSON.stringify(first)})`);
    }
    timed(f, Math.min(iterations, 20_000));
    result[name] = median([0, 1, 2].map(() => timed(f, iterations)));
  }
  return result;
}

const child = process.argv[2] === '--child';
if (child) {
  const [tree = here, service = 'demuxer'] = process.argv.slice(3);
  process.stdout.write(JSON.stringify(await measure(tree, service, Number(process.env['DOORS_BENCH_ITERATIONS'] ?? 50_000))));
} else {
  const base = process.env['DOORS_BENCH_BASE'];
  const rounds = Number(process.env['DOORS_BENCH_ROUNDS'] ?? 5);
  const trees = base === undefined ? [here] : [resolve(base), here];
  const runs = new Map<string, Array<Record<string, number>>>(trees.map((t) => [t, []]));
  for (let round = 0; round < rounds; round++) {
    for (const tree of alternating(trees, round)) {
      const measured = (service: string) =>
        JSON.parse(
          execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--child', tree, service], {
            encoding: 'utf8',
            cwd: here,
          }),
        ) as Record<string, number>;
      runs.get(tree)?.push({ ...measured('demuxer'), ...measured('pusher') });
    }
  }
  const medians = (tree: string): Record<string, number> => {
    const all = runs.get(tree) ?? [];
    return Object.fromEntries(Object.keys(all[0] ?? {}).map((name) => [name, median(all.map((r) => r[name] ?? NaN))]));
  };
  const mine = medians(here);
  const theirs = base === undefined ? undefined : medians(resolve(base));
  console.log(`CPU µs a message, median of ${rounds} rounds${theirs === undefined ? '' : ` a tree, alternating with ${base}`}`);
  for (const [name, us] of Object.entries(mine)) {
    const before = theirs?.[name];
    console.log(
      `  ${name.padEnd(40)} ${us.toFixed(2).padStart(7)}${before === undefined ? '' : `   base ${before.toFixed(2).padStart(7)}   this / base ${(us / before).toFixed(2)}`}`,
    );
  }
}
