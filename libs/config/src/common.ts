import { bindAddress } from './bind-address.ts';
import { int, intList, oneOf, postgresUrl, str, urlList } from './vars.ts';

/** Device pushes a send-queue message carries unless PUSH_PACK_SIZE says otherwise (ADR 0016). */
export const DEFAULT_PUSH_PACK_SIZE = 10;

/** Services that publish device pushes to the send queues (demuxer, deschedulers) pack them (ADR 0016). */
export const pushPackConfig = {
  PUSH_PACK_SIZE: int('Most device pushes carried by one RabbitMQ message to a send queue (1: one each); pushers still settle each push on its own and start no more at once than their window (PUSHER_PREFETCH). Set it alike for every service, the monitor included: queue depths count messages, so the backlog alarm counts up to this many pushes a send-queue message (ADR 0016)', {
    default: String(DEFAULT_PUSH_PACK_SIZE),
    min: 1,
    max: 100,
  }),
} as const;

/**
 * How far ahead a job may be scheduled, read alike by every service that judges a deliverAt: the
 * HTTP API and the CLI refuse a later one at the door, the demuxer parks one that got past
 * (bad-schedule). Set apart, the API answered 202 to a job the demuxer then parked, or refused one
 * the demuxer would take. The default is the contracts' DEFAULT_SCHEDULE_HORIZON_DAYS (the client
 * library's, when its caller passes no scheduleHorizonDays).
 */
export const scheduleHorizonConfig = {
  SCHEDULE_HORIZON_DAYS: int(
    'How far ahead a job may be scheduled (deliverAt): the HTTP API answers a later one 400 and the CLI refuses it, the demuxer parks one that got past (bad-schedule). Set it alike for the api, the demuxer and the CLI, and pass it to the client library (scheduleHorizonDays)',
    { default: '366', min: 1 },
  ),
} as const;

/**
 * The retry schedule of every consumer that retries through the delay queues, and of what declares
 * those queues (prepare, apply-topology): one delay queue per entry, so set it alike everywhere.
 */
export const retryScheduleConfig = {
  HERALD_RETRY_DELAYS_MS: intList('Retry schedule: the delay before each retry attempt, in ms', { default: '1000,5000,30000,120000,600000' }),
} as const;

/**
 * How long the pushers' delivery ledger remembers a push, read by the pushers (which prune it) and
 * by the demuxer, whose JOB_RETENTION_DAYS must outlast it: a job id used again once its job was
 * pruned derives the same push ids, and while the ledger still held them done every push of the
 * new job was acked unsent as a duplicate (and, for a job once cancelled, dropped as cancelled).
 */
export const ledgerRetentionConfig = {
  LEDGER_RETENTION_HOURS: int(
    'Ledger entries older than this are pruned; must exceed the retry schedule plus the lease plus any time a push sits parked or is held while its provider is down (PROVIDER_DOWN_HOLD_MS), and be shorter than JOB_RETENTION_DAYS (the demuxer refuses to start otherwise). Set it alike for the pushers and the demuxer',
    { default: '168', min: 1 },
  ),
} as const;

/** Settings every service shares: where the broker and database are, and how to log. */
export const commonConfig = {
  AMQP_URL: urlList(['amqp', 'amqps'], 'RabbitMQ URL, including the vhost; for a cluster, a comma-separated list of its nodes (every connection fails over to a live one)', {
    default: 'amqp://guest:guest@127.0.0.1:5672/',
    alias: 'AMQP_URLS',
  }),
  DATABASE_URL: postgresUrl(
    'PostgreSQL URL; several hosts as libpq takes them (postgres://u@db-1:5432,db-2:5432/herald?target_session_attrs=read-write) make every connection go to the one that accepts writes',
    { default: 'postgres://postgres@127.0.0.1:5432/herald' },
  ),
  DATABASE_SCHEMA: str('PostgreSQL schema that holds Herald tables', { default: 'public' }),
  DATABASE_QUERY_TIMEOUT_MS: int(
    'Longest one PostgreSQL statement may go unanswered, counted from its sending (not from a wait for a busy pool), before its connection and the pool\'s idle ones are closed and the statement fails as the database being unavailable (deferred, tried again on a new connection). Without it a statement sent to a primary lost without a word (power cut, partition) waits about 15 minutes for the kernel to give up. A statement waiting longer for a lock (a migration holding a table) is cut too, and tried again; a server alive but that slow cancels it itself a little earlier (statement_timeout, set by the longest bound of the statements of the process: where the ledger bound of a pusher is the longer, other statements the client gave up on may still commit up to it), rolling it back. Pushers bound their ledger statements by a sixth of LEDGER_LEASE_MS (at least 1 s) whatever this says. 0: no bound',
    { default: '60000', min: 0 },
  ),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace'], 'pino log level', { default: 'info' }),
  LOG_FORMAT: oneOf(['json', 'pretty', 'auto'], 'json, pretty, or auto (pretty only when stdout is a terminal)', { default: 'auto' }),
  HTTP_PORT: int('Port for /metrics, /healthz and /readyz (0 picks a free port)', { default: '0', min: 0, max: 65535 }),
  HTTP_HOST: bindAddress('Address /metrics, /healthz and /readyz listen on (0.0.0.0: every IPv4 interface, e.g. for a Prometheus on another machine)'),
  SHUTDOWN_TIMEOUT_MS: int('How long SIGTERM waits for in-flight work before closing', { default: '10000', min: 0 }),
} as const;
