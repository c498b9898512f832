import type { Platform } from '@herald/contracts';
import type { ServiceName } from '../../infra/local/service-list.ts';

/** What the sandbox does with a device's pushes. */
export type DeviceKind = 'ok' | 'dead' | 'flaky';

export interface ChaosDevice {
  userId: string;
  platform: Platform;
  token: string;
  kind: DeviceKind;
}

export interface ChaosJob {
  id: string;
  userIds: string[];
  /** Due this many ms after it is published (undefined: at once). */
  delayMs?: number;
  /** Expires this many ms after it is published, before the demuxer takes it: every push of it is dropped as expired. */
  expiresInMs?: number;
  /** When (ms after the stream starts) the generator publishes it. */
  atMs: number;
}

/** The services on the delivery path, each SIGKILLed at least once (the monitor only watches). */
export const CHAOS_SERVICES = [
  'registrar', 'demuxer', 'apns-pusher', 'fcm-pusher', 'apns-descheduler', 'fcm-descheduler', 'apns-invalidator', 'fcm-invalidator',
] as const satisfies readonly ServiceName[];
export type ServiceKind = (typeof CHAOS_SERVICES)[number];
/**
 * One fault moment: SIGKILL and restart some services, restart RabbitMQ or PostgreSQL, or (on the
 * three-node cluster) lose broker nodes: SIGKILL the node leading push.jobs, then with it still
 * down stop a second one for a while (no majority: writes refused), then bring both back.
 */
export type FaultAction = { kind: 'kill'; services: ServiceKind[] } | { kind: 'rabbitmq' } | { kind: 'postgresql' } | { kind: 'node-loss' };
export interface PlannedFault {
  atMs: number;
  action: FaultAction;
}

export interface ChaosPlan {
  form: 'short' | 'long';
  /** Run on the three-node cluster, two processes of every service (cluster-chaos.spec.ts). */
  cluster: boolean;
  seed: number;
  devices: ChaosDevice[];
  jobs: ChaosJob[];
  faults: PlannedFault[];
  streamMs: number;
  /** One new registration (of a user no job targets) every this many ms while the stream runs. */
  churnEveryMs: number;
}

interface Shape {
  users: number;
  deadUsers: number;
  /** Devices the sandbox always answers 503 for (their pushes end parked); few, as each 503 also slows the pusher (AIMD). */
  flakyDevices: number;
  jobs: number;
  streamMs: number;
  usersPerJob: [number, number];
  scheduledFraction: number;
  expiringFraction: number;
  faultMoments: number;
}

const SHAPES: Record<ChaosPlan['form'], Shape> = {
  short: { users: 260, deadUsers: 16, flakyDevices: 3, jobs: 240, streamMs: 45_000, usersPerJob: [1, 8], scheduledFraction: 0.2, expiringFraction: 0.03, faultMoments: 6 },
  long: { users: 20_000, deadUsers: 300, flakyDevices: 12, jobs: 2_800, streamMs: 200_000, usersPerJob: [1, 40], scheduledFraction: 0.2, expiringFraction: 0.02, faultMoments: 15 },
};

/** mulberry32: a small seeded generator, so a failing run can be replayed with CHAOS_SEED. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const between = (rng: Rng, min: number, max: number): number => min + Math.floor(rng() * (max - min + 1));
const hex = (rng: Rng, bytes: number): string => Array.from({ length: bytes }, () => between(rng, 0, 255).toString(16).padStart(2, '0')).join('');
const b64 = (rng: Rng, n: number): string => {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  return Array.from({ length: n }, () => abc[between(rng, 0, 63)]).join('');
};
const tokenFor = (rng: Rng, platform: Platform): string => (platform === 'apns' ? hex(rng, 32) : `${b64(rng, 11)}:APA91b${b64(rng, 80)}`);

export function shuffle<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = between(rng, 0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Regular users have 1–3 devices on either platform, a few of them flaky (always 503); dead users have one dead device. */
function population(rng: Rng, shape: Shape, seed: number): { devices: ChaosDevice[]; users: string[]; deadUsers: string[] } {
  const devices: ChaosDevice[] = [];
  const users = Array.from({ length: shape.users }, (_, i) => `chaos-${seed}-u${i}`);
  for (const userId of users) {
    for (let d = between(rng, 1, 3); d > 0; d--) {
      const platform: Platform = rng() < 0.5 ? 'apns' : 'fcm';
      devices.push({ userId, platform, token: tokenFor(rng, platform), kind: 'ok' });
    }
  }
  for (const d of shuffle(rng, devices).slice(0, shape.flakyDevices)) d.kind = 'flaky';
  const deadUsers = Array.from({ length: shape.deadUsers }, (_, i) => `chaos-${seed}-dead${i}`);
  for (const [i, userId] of deadUsers.entries()) {
    const platform: Platform = i % 2 === 0 ? 'apns' : 'fcm';
    devices.push({ userId, platform, token: tokenFor(rng, platform), kind: 'dead' });
  }
  return { devices, users, deadUsers };
}

/**
 * Jobs spread evenly over the stream. Each dead user is targeted by exactly one job, spread over
 * the stream too, so invalidations keep arriving (the invalidators' work) until the end.
 */
function jobsFor(rng: Rng, shape: Shape, seed: number, users: readonly string[], deadUsers: readonly string[]): ChaosJob[] {
  const deadAt = new Map(deadUsers.map((userId, j) => [Math.floor(((j + 0.5) * shape.jobs) / deadUsers.length), userId]));
  const jobs: ChaosJob[] = [];
  for (let i = 0; i < shape.jobs; i++) {
    const picked = new Set<string>();
    for (let n = between(rng, ...shape.usersPerJob); n > 0; n--) picked.add(users[between(rng, 0, users.length - 1)] as string);
    const dead = deadAt.get(i);
    if (dead !== undefined) picked.add(dead);
    const job: ChaosJob = { id: `chaos-${seed}-j${i}`, userIds: [...picked], atMs: Math.round((i * shape.streamMs) / shape.jobs) };
    const roll = rng();
    // A dead user's one push must be sent (so the 410 comes back): never on an expiring job.
    // It expires a millisecond after it is published, so the demuxer finds it expired: a job due after
    // it expires is refused at the door (it could deliver nothing), so none is scheduled.
    if (roll < shape.expiringFraction && dead === undefined) Object.assign(job, { expiresInMs: 1 });
    else if (roll < shape.expiringFraction + shape.scheduledFraction) job.delayMs = between(rng, 2_000, 6_000);
    jobs.push(job);
  }
  return jobs;
}

/**
 * Fault moments at random times (at least 4 s apart, all in the first 70% of the stream, so the
 * stream still flows when a late one has recovered; a fault waits for the previous one). Every
 * kind of service is SIGKILLed at least once; RabbitMQ and PostgreSQL are restarted at least once.
 * Short form: the eight services are split over four kill moments (two each). Long form: one moment per
 * service, two restarts each of RabbitMQ and PostgreSQL, and the pushers once more.
 */
function faultsFor(rng: Rng, shape: Shape, cluster: boolean): PlannedFault[] {
  const services = shuffle(rng, CHAOS_SERVICES);
  const broker: FaultAction = cluster ? { kind: 'node-loss' } : { kind: 'rabbitmq' };
  const actions: FaultAction[] = [broker, { kind: 'postgresql' }];
  if (shape.faultMoments <= 6) {
    const groups = [services.slice(0, 2), services.slice(2, 4), services.slice(4, 6), services.slice(6)];
    actions.push(...groups.map((g): FaultAction => ({ kind: 'kill', services: g })));
  } else {
    actions.push(broker, { kind: 'postgresql' }, ...services.map((s): FaultAction => ({ kind: 'kill', services: [s] })));
    while (actions.length < shape.faultMoments) actions.push({ kind: 'kill', services: [actions.length % 2 === 0 ? 'apns-pusher' : 'fcm-pusher'] });
  }
  // On the cluster the node loss comes first, so the stream flows on long after the majority is back.
  const ordered = cluster ? [broker, ...shuffle(rng, actions.slice(1))] : shuffle(rng, actions);
  const slot = (shape.streamMs * 0.7 - 2_000) / ordered.length;
  return ordered.map((action, i) => ({ action, atMs: Math.round(2_000 + i * slot + rng() * Math.max(0, slot - 4_000)) }));
}

export function chaosPlan(form: ChaosPlan['form'], seed: number, opts: { cluster?: boolean } = {}): ChaosPlan {
  const rng = seededRandom(seed);
  const shape = SHAPES[form];
  const cluster = opts.cluster ?? false;
  const { devices, users, deadUsers } = population(rng, shape, seed);
  return {
    form,
    cluster,
    seed,
    devices,
    jobs: jobsFor(rng, shape, seed, users, deadUsers),
    faults: faultsFor(rng, shape, cluster),
    streamMs: shape.streamMs,
    churnEveryMs: 250,
  };
}

/** One expected or observed device push. */
export const pushKey = (jobId: string, token: string): string => `${jobId}|${token}`;

/** The n-th registration of the churn stream (users no job targets). */
export function churnDevice(seed: number, n: number): ChaosDevice {
  const rng = seededRandom(seed ^ (0x9e3779b9 + n));
  const platform: Platform = n % 2 === 0 ? 'apns' : 'fcm';
  return { userId: `chaos-${seed}-churn${n}`, platform, token: tokenFor(rng, platform), kind: 'ok' };
}
