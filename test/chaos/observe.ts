import { delayQueueFor, derivePushId, DevicePush, Queues, sendQueueFor, type Platform } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { delayQueuesOf, listParked } from '@herald/messaging';
import { queueInfo } from '@herald/testing';
import type { System } from '../support/system.ts';
import { pushKey, type ChaosDevice } from './chaos-plan.ts';

const logger = createLogger({ service: 'chaos', level: 'warn', format: 'json' });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The retry schedules the system's services were given (the pushers' and the others'). */
const scheduledDelays = (sys: System): number[] =>
  ['HERALD_RETRY_DELAYS_MS', 'PUSHER_RETRY_DELAYS_MS'].flatMap((name) => (sys.env[name] ?? '').split(',').filter((d) => d !== '').map(Number));

/**
 * Every queue that holds work (not the parked ones): the work queues and every delay queue of the
 * system's retry schedules, LONGEST_DELAY_MS's too (herald.delay.1200000ms), where a defer longer
 * than the schedule's delays waits (a copy deferred as in flight or for budget, a Retry-After).
 */
export const workQueues = (sys: System): string[] => [...Object.values(Queues), ...delayQueuesOf(scheduledDelays(sys)).map(delayQueueFor)];

/** Ready plus unacknowledged messages in every queue that holds work. */
async function workInQueues(sys: System): Promise<number> {
  const queues = workQueues(sys);
  const infos = await Promise.all(queues.map((q) => queueInfo(sys.vhost.name, q, sys.managementApi)));
  return infos.reduce((sum, i) => sum + (i?.messages ?? 0), 0);
}

async function scheduledLeft(sys: System): Promise<number> {
  const row = await sys.database.db.kysely.selectFrom('scheduled_pushes').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Wait until no work is left anywhere (queues empty, nothing scheduled) twice in a row, `settleMs`
 * apart, so a push that is redelivered after a lease (a possible duplicate) is seen too.
 * Returns false if that does not happen within timeoutMs.
 */
export async function drain(sys: System, settleMs: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quietSince: number | undefined;
  while (Date.now() < deadline) {
    const busy = await Promise.all([workInQueues(sys), scheduledLeft(sys)]).then(([q, s]) => q + s).catch(() => 1);
    if (busy > 0) quietSince = undefined;
    else quietSince ??= Date.now();
    if (quietSince !== undefined && Date.now() - quietSince >= settleMs) return true;
    await sleep(250);
  }
  return false;
}

/** Parked pushes by push key, parked job ids, and every parked message by code, read from the parked queues (and left there). */
export async function readParked(sys: System): Promise<{ pushes: Map<string, number>; jobs: Set<string>; byCode: Map<string, number> }> {
  const pushes = new Map<string, number>();
  const byCode = new Map<string, number>();
  for (const platform of ['apns', 'fcm'] as Platform[]) {
    for (const m of (await listParked({ url: sys.vhost.amqpUrl, logger, queue: sendQueueFor(platform) })).messages) {
      byCode.set(m.code ?? 'unknown', (byCode.get(m.code ?? 'unknown') ?? 0) + 1);
      const push = DevicePush.safeParse(JSON.parse(m.body.toString('utf8')));
      if (push.success) pushes.set(pushKey(push.data.jobId, push.data.token), (pushes.get(pushKey(push.data.jobId, push.data.token)) ?? 0) + 1);
    }
  }
  const jobs = new Set<string>();
  for (const m of (await listParked({ url: sys.vhost.amqpUrl, logger, queue: Queues.jobs })).messages) {
    const id = (JSON.parse(m.body.toString('utf8')) as { id?: unknown }).id;
    if (typeof id === 'string') jobs.add(id);
    byCode.set(`job ${m.code ?? 'unknown'}`, (byCode.get(`job ${m.code ?? 'unknown'}`) ?? 0) + 1);
  }
  for (const queue of [Queues.registrations, Queues.apnsInvalidations, Queues.fcmInvalidations]) {
    for (const m of (await listParked({ url: sys.vhost.amqpUrl, logger, queue })).messages) {
      byCode.set(`${queue} ${m.code ?? 'unknown'}`, (byCode.get(`${queue} ${m.code ?? 'unknown'}`) ?? 0) + 1);
    }
  }
  return { pushes, jobs, byCode };
}

/** Database facts the summary needs: dead devices not marked dead, and when things were stored. */
export async function deviceFacts(sys: System, dead: readonly ChaosDevice[], churnTokens: readonly string[]) {
  const db = sys.database.db.kysely;
  const deadRows = dead.length === 0 ? [] : await db.selectFrom('devices').select(['token', 'platform', 'invalidated_at', 'updated_at']).where('token', 'in', dead.map((d) => d.token)).execute();
  const churnRows = churnTokens.length === 0 ? [] : await db.selectFrom('devices').select(['token', 'created_at']).where('token', 'in', [...churnTokens]).execute();
  const stored = new Set(churnRows.map((r) => r.token));
  return {
    notInvalidated: dead.filter((d) => !deadRows.some((r) => r.token === d.token && r.invalidated_at !== null)).map((d) => d.token),
    invalidatedAt: deadRows.filter((r) => r.invalidated_at !== null).map((r) => ({ platform: r.platform, at: r.updated_at.getTime() })),
    registeredAt: churnRows.map((r) => r.created_at.getTime()),
    churnMissing: churnTokens.filter((t) => !stored.has(t)),
  };
}

/**
 * A push the pusher chose to retry: its copy scheduled, or (the broker refusing the copy, or the
 * channel gone before it was settled) the message itself left to come back.
 */
function isRetry(l: Record<string, unknown>): boolean {
  if (l['msg'] === 'message scheduled for retry') return true;
  const requeued = l['msg'] === 'channel closed before settling; message will be redelivered' || String(l['msg']).endsWith('; requeueing after back-off');
  return requeued && l['outcome'] === 'retry';
}

/**
 * When a pusher scheduled each push for retry, from the pushers' logs (their settle logs carry the message id, which is
 * the pushId, and when the retry was chosen), keyed like the reconciliation's pushes.
 */
export async function retriesByKey(sys: System, expected: ReadonlyArray<{ key: string; jobId: string; token: string }>): Promise<Map<string, number[]>> {
  const rows = await sys.database.db.kysely.selectFrom('devices').select(['id', 'token']).execute();
  const deviceIds = new Map(rows.map((r) => [r.token, String(r.id)]));
  const keyOf = new Map<string, string>();
  for (const e of expected) {
    const deviceId = deviceIds.get(e.token);
    if (deviceId !== undefined) keyOf.set(derivePushId(e.jobId, deviceId), e.key);
  }
  const out = new Map<string, number[]>();
  for (const s of [...sys.services.values()].filter((x) => x.name.includes('-pusher'))) {
    for (const l of s.logs) {
      const key = isRetry(l) ? keyOf.get(String(l['messageId'])) : undefined;
      // When the pusher chose the retry: the copy's confirm (and so the log line) can come much later.
      if (key !== undefined) out.set(key, [...(out.get(key) ?? []), Date.parse(String(l['decidedAt'] ?? l['time']))]);
    }
  }
  return out;
}
