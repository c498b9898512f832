/**
 * One row per Herald service deployed to Kubernetes: the single source the generator
 * (generate.ts) turns into base/services/<name>.yaml, and that docs/scaling.md explains.
 * Memory comes from the README's "Latest figures" (peak RSS, VmHWM, 2026-11-22 and the 2026-11-25
 * fan-out run): the request covers the measured peak, the limit leaves about half again on top.
 * CPU requests come from the measured CPU per push (demuxer ~40 µs, apns-pusher ~130 µs,
 * fcm-pusher ~185 µs): 250m is ~1,400–1,900 pushes/s of a pusher. No CPU limits: throttling a
 * Node event loop turns into latency and missed heartbeats, while memory is the hard bound.
 */
import { DEFAULT_PUSH_PACK_SIZE } from '@herald/config';
import { Queues, type WorkQueue } from '@herald/contracts';

/** How instances share the work (docs/scaling.md says why, per service). */
export type Scaling = 'free' | 'leased' | 'singleton';

/** Which PostgreSQL endpoint a service uses: PgBouncer in transaction mode, or the primary itself. */
export type DatabaseRoute = 'pooler' | 'primary';

export interface QueueTrigger {
  queue: WorkQueue;
  /** Messages ready per replica KEDA aims for (desired replicas = ceil(ready / this)). */
  perReplica: number;
}

export interface ServiceSpec {
  /** The image's command (infra/container/entrypoint.mjs) and the Deployment's name after `herald-`. */
  name: string;
  summary: string;
  scaling: Scaling;
  database: DatabaseRoute;
  /**
   * The most PostgreSQL connections one process opens on `database`'s route: the max of each pool
   * it creates (libs/db's createDatabase, poolSize 10 unless given) plus its dedicated clients (a
   * LISTEN connection). The spec sums these at KEDA's maxima against max_connections and the Pooler.
   */
  connections: number;
  memory: { request: string; limit: string; measured: string };
  cpu: string;
  /** Fixed replicas, or the range KEDA scales within. */
  replicas: { min: number; max: number };
  /** KEDA triggers: the queues this service consumes. None: fixed replicas (or CPU for the API). */
  queues: QueueTrigger[];
  /** Scale on CPU utilisation (%) instead of a queue (the HTTP API). */
  cpuUtilisation?: number;
  /** Extra container ports beside metrics (name → port). */
  ports?: Record<string, number>;
  /** Port of /metrics, /healthz and /readyz when not the default HTTP_PORT. */
  opsPort?: number;
  /**
   * Its readiness probe asks /healthz, not /readyz: its callers are better served by it without
   * RabbitMQ than by no pod at all (the API answers 503 broker-unavailable to a publish, and its
   * routes that read PostgreSQL keep working), since RabbitMQ out is out for every pod at once.
   */
  servesWithoutBroker?: boolean;
  /** Seconds the pod keeps serving after SIGTERM is sent, so load balancers stop sending first. */
  preStopSeconds?: number;
  /** Literal environment beyond the ConfigMap. */
  env?: Record<string, string>;
  /** Keys of the herald-secrets Secret this service reads (each optional). */
  secrets?: string[];
  /** Mount the optional herald-provider-credentials Secret (process-level APNs/FCM keys). */
  providerCredentials?: boolean;
  /** Keep a client on one pod (the monitor's dashboard sessions live in the pod that signed them in). */
  sessionAffinity?: 'ClientIP';
}

/** HTTP_PORT of every service but the monitor (ConfigMap), as the image sets it. */
export const OPS_PORT = 9400;
/** SHUTDOWN_TIMEOUT_MS in the ConfigMap; the runtime exits at most 5 s after it (libs/runtime/src/shutdown.ts). */
export const SHUTDOWN_TIMEOUT_MS = 20_000;
export const SHUTDOWN_OVERRUN_MS = 5_000;
/**
 * RabbitMQ nodes (the RabbitmqCluster's replicas). Every connection lists each node (AMQP_URL as a
 * list fails over between them, and `prepare` gives new quorum queues a replica on each).
 */
export const RABBITMQ_NODES = 3;
/**
 * PostgreSQL connections of the prepare Job (one pod, against the primary): its pool's max
 * (infra/local/prepare.ts, createDatabase's default 10; migrations hold one, under a session lock).
 */
export const PREPARE_CONNECTIONS = 10;

const small = { request: '128Mi', limit: '192Mi' };
/** Ready device pushes per pusher replica; a send-queue message carries up to PUSH_PACK_SIZE of them (ADR 0016). */
const PUSHES_PER_PUSHER = 2_000;
/**
 * A pusher's pool (runPusher, libs/delivery/src/run-pusher.ts: createDatabase's default 10, shared
 * with the ledger pruner) and the rate limiter's lease pool of 2 (openLimiterDatabase,
 * libs/delivery/src/pusher-limiter.ts; RATE_LIMIT_ENABLED defaults to true).
 */
const PUSHER_CONNECTIONS = 10 + 2;
/** The default DESCHEDULER_CONCURRENCY (libs/delivery/src/descheduler-config.ts); the ConfigMap does not set it. */
const DESCHEDULER_CONCURRENCY = 2;
const pusher = (name: string, queue: WorkQueue, measured: string, extra: Partial<ServiceSpec> = {}): ServiceSpec => ({
  name,
  summary: `sends ${queue}`,
  scaling: 'free',
  database: 'primary',
  connections: PUSHER_CONNECTIONS,
  memory: { request: '256Mi', limit: '384Mi', measured },
  cpu: '250m',
  replicas: { min: 2, max: 20 },
  queues: [{ queue, perReplica: PUSHES_PER_PUSHER / DEFAULT_PUSH_PACK_SIZE }],
  secrets: ['HERALD_SECRET_KEY'],
  providerCredentials: true,
  ...extra,
});

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'registrar',
    summary: 'applies device registrations',
    scaling: 'free',
    database: 'pooler',
    connections: 10, // apps/registrar/src/main.ts: createDatabase's default pool
    memory: { ...small, measured: '86–87 MB' },
    cpu: '100m',
    replicas: { min: 2, max: 6 },
    queues: [{ queue: Queues.registrations, perReplica: 1_000 }],
  },
  {
    name: 'demuxer',
    summary: 'turns jobs into device pushes; expands audiences chunk by chunk',
    scaling: 'free',
    database: 'pooler',
    connections: 10, // apps/demuxer/src/main.ts: createDatabase's default pool
    memory: { request: '192Mi', limit: '320Mi', measured: '124–174 MB; 168–184 MB expanding a 200,000-device audience' },
    cpu: '200m',
    replicas: { min: 2, max: 10 },
    queues: [
      { queue: Queues.jobs, perReplica: 500 },
      { queue: Queues.fanout, perReplica: 4 },
    ],
  },
  pusher('apns-pusher', Queues.apnsSend, '202–211 MB; 227 MB in the fan-out run'),
  pusher('fcm-pusher', Queues.fcmSend, '223–230 MB; 243 MB in the fan-out run'),
  pusher('web-pusher', Queues.webSend, 'not measured on its own; sized as the other pushers', {
    summary: `sends ${Queues.webSend} and releases due scheduled web pushes`,
    secrets: ['HERALD_SECRET_KEY', 'WEB_PUSH_VAPID_PUBLIC_KEY', 'WEB_PUSH_VAPID_PRIVATE_KEY', 'WEB_PUSH_VAPID_SUBJECT'],
    providerCredentials: false,
    // Its in-process descheduler batches through the pusher's pool, and LISTENs on a client of its
    // own (startInProcessDescheduler → listenForSchedules, libs/db/src/schedule-listener.ts).
    connections: PUSHER_CONNECTIONS + 1,
  }),
  ...(['apns', 'fcm'] as const).map((platform): ServiceSpec => ({
    name: `${platform}-descheduler`,
    summary: `releases due scheduled ${platform} pushes`,
    scaling: 'free',
    database: 'primary',
    // runDescheduler's pool, DESCHEDULER_CONCURRENCY + 2 (libs/delivery/src/run-descheduler.ts), and its LISTEN client.
    connections: DESCHEDULER_CONCURRENCY + 2 + 1,
    memory: { ...small, measured: '84–118 MB ("others")' },
    cpu: '100m',
    replicas: { min: 2, max: 2 },
    queues: [],
  })),
  ...(
    [
      ['apns', Queues.apnsInvalidations],
      ['fcm', Queues.fcmInvalidations],
      ['web', Queues.webInvalidations],
    ] as const
  ).map(([platform, queue]): ServiceSpec => ({
    name: `${platform}-invalidator`,
    summary: `marks dead ${platform} tokens`,
    scaling: 'free',
    database: 'pooler',
    connections: 10, // runInvalidator (libs/delivery/src/run-invalidator.ts): createDatabase's default pool
    memory: { ...small, measured: '84–118 MB ("others")' },
    cpu: '50m',
    replicas: { min: 2, max: 4 },
    queues: [{ queue, perReplica: 1_000 }],
  })),
  {
    name: 'api',
    summary: 'the HTTP API for teams',
    scaling: 'free',
    database: 'pooler',
    connections: 10 + 10, // apps/api/src/main.ts: two pools of 10 (db, and jobDb for the job-id records)
    memory: { request: '128Mi', limit: '256Mi', measured: '84–118 MB ("others")' },
    cpu: '250m',
    replicas: { min: 2, max: 10 },
    queues: [],
    cpuUtilisation: 70,
    ports: { http: 8080 },
    servesWithoutBroker: true,
    preStopSeconds: 5,
    env: { API_HOST: '0.0.0.0', API_PORT: '8080' },
    secrets: ['HERALD_SECRET_KEY', 'HERALD_ADMIN_KEY'],
  },
  {
    name: 'webhook-fanout',
    summary: 'matches change events to webhook subscriptions',
    scaling: 'free',
    database: 'pooler',
    connections: 10, // apps/webhook-fanout/src/main.ts: createDatabase's default pool
    memory: { ...small, measured: '84–118 MB ("others")' },
    cpu: '50m',
    replicas: { min: 2, max: 6 },
    queues: [{ queue: Queues.changes, perReplica: 500 }],
  },
  {
    name: 'webhook-pusher',
    summary: 'POSTs webhook deliveries',
    scaling: 'free',
    database: 'primary',
    // apps/webhook-pusher/src/main.ts: createDatabase's default pool, and the rate limiter's lease
    // pool of 2 (createPusherLimiter).
    connections: PUSHER_CONNECTIONS,
    memory: { ...small, measured: '84–118 MB ("others")' },
    cpu: '100m',
    replicas: { min: 2, max: 6 },
    queues: [{ queue: Queues.webhookSend, perReplica: 500 }],
  },
  {
    name: 'monitor',
    summary: 'queue alarms, /metrics of every queue, the operator dashboard',
    // Every instance polls and serves; the holder of the monitor-alarms lease (libs/db lease.ts) announces.
    scaling: 'leased',
    database: 'pooler',
    connections: 2, // apps/monitor/src/main.ts: a pool of 2 (the alarms lease is a row, through it)
    memory: { request: '128Mi', limit: '256Mi', measured: '84–118 MB ("others")' },
    cpu: '100m',
    replicas: { min: 2, max: 2 },
    sessionAffinity: 'ClientIP',
    queues: [],
    opsPort: 9470,
    secrets: ['MONITOR_WEBHOOK_URL'],
  },
];

/** Every queue a Herald service consumes, with the service (so the spec can check each has a trigger). */
export const consumedQueues = (): Map<WorkQueue, string> =>
  new Map(SERVICES.flatMap((s) => s.queues.map((q): [WorkQueue, string] => [q.queue, s.name])));
