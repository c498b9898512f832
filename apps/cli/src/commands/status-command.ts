import { pushesPerMessage, WorkQueues } from '@herald/contracts';
import { activeConditions, createManagementApi, drainSecondsOf, nodeConditions, resourceAlarmConditions, vhostOf } from '@herald/monitoring';
import type { Command } from 'commander';
import { readCliConfig, type CliConfig } from '../cli-config.ts';
import { printRows } from '../output.ts';

interface QueueRow {
  name: string;
  kind: string;
  messages: number;
  ready: number;
  unacked: number;
  consumers: number;
  publishRate: number;
  ackRate: number;
  drainSeconds: number | null;
  /** The oldest message's age: the monitor's estimate, or (computed locally) the broker's head timestamp when it has one. */
  oldestAgeSeconds?: number;
  /** The monitor has not seen the queue empty since it started: its messages may be much older. */
  oldestAgeIsLowerBound?: boolean;
}

interface AlarmRow {
  alarm: string;
  queue: string;
  summary: string;
  /** When the monitor raised it (absent when computed locally: a condition holding now). */
  firedAt?: number;
}

interface StatusView {
  /** `monitor`: the monitor's view, with its alarms; `local`: read from RabbitMQ now, conditions without durations. */
  source: 'monitor' | 'local';
  note: string;
  vhost: string;
  queues: QueueRow[];
  alarms: AlarmRow[];
  /**
   * The monitor has not yet watched for its longest alarm delay (since it started): conditions that
   * held before may still become alarms, so none firing is not all clear yet.
   */
  warmingUp?: { watchingSince: string | null; until: string | null };
}

interface MonitorStatus {
  vhost: string;
  at: string | null;
  queues: QueueRow[];
  alarms: AlarmRow[];
  /** Absent from a monitor of an earlier release. */
  warmingUp?: boolean;
  watchingSince?: string | null;
  warmingUpUntil?: string | null;
}

const MONITOR_TIMEOUT_MS = 1_500;
const MAX_SAID_CHARS = 200;

/** What an error answer said: its JSON `error`, else the start of its text. */
async function saidBy(res: Response): Promise<string> {
  const text = await res.text();
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error === 'string') return error;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, MAX_SAID_CHARS);
}

/**
 * The monitor's /api/status, when it answers quickly and watches the same vhost; else why not, for
 * the local view's note. A monitor that answers with an error (a 503 while PostgreSQL, which holds
 * the operator keys, is down) is there: saying "no monitor" would send the operator looking for
 * a dead process, and the local view lacks the monitor's database alarms.
 */
async function fromMonitor(config: CliConfig, vhost: string): Promise<StatusView | string> {
  const base = config.MONITOR_URL.replace(/\/$/, '');
  if (config.HERALD_OPERATOR_KEY === undefined) return 'HERALD_OPERATOR_KEY is not set, so the monitor was not asked';
  const answer = await fetch(`${base}/api/status`, {
    headers: { authorization: `Bearer ${config.HERALD_OPERATOR_KEY}` },
    signal: AbortSignal.timeout(MONITOR_TIMEOUT_MS),
  })
    .then(async (res) => ({
      status: res.status,
      body: res.ok ? ((await res.json()) as MonitorStatus) : undefined,
      said: res.status >= 500 ? await saidBy(res) : undefined,
    }))
    // Unreachable, slow or not answering JSON: no monitor to ask.
    .catch(() => undefined);
  // A refused key is the operator's to fix, not a missing monitor: the local view without it would blame the monitor.
  if (answer?.status === 401 || answer?.status === 403) {
    throw new Error(`the monitor at ${base} refused HERALD_OPERATOR_KEY (HTTP ${answer.status}): set a live operator key (\`herald keys list\`), or unset it for a status computed locally`);
  }
  if (answer?.said !== undefined) return `the monitor at ${base} answered HTTP ${answer.status}${answer.said === '' ? '' : `: ${answer.said}`}`;
  const status = answer?.body;
  if (status === undefined || status.vhost !== vhost || status.at === null) return `no monitor for vhost ${vhost} at ${config.MONITOR_URL}`;
  return {
    source: 'monitor',
    note: `from the monitor at ${base} (polled ${status.at})`,
    vhost,
    queues: status.queues,
    alarms: status.alarms,
    ...(status.warmingUp === true && { warmingUp: { watchingSince: status.watchingSince ?? null, until: status.warmingUpUntil ?? null } }),
  };
}

/** Straight from the management API; alarms are the conditions holding right now (no durations, no history). `why`: why not from the monitor. */
async function computedLocally(config: CliConfig, vhost: string, why: string): Promise<StatusView> {
  const api = createManagementApi(config.RABBITMQ_API_URL);
  // The nodes' alarms too (down, partitioned, memory or disk), when the management user may read them (the monitoring tag).
  const [queues, nodes] = await Promise.all([api.queues(vhost), api.nodes().catch(() => [])]);
  const conditions = [...activeConditions({
    queues,
    thresholds: config.MONITOR_THRESHOLDS,
    parkedBaseline: () => undefined,
    pushesPerMessage: pushesPerMessage(config.PUSH_PACK_SIZE),
    // As the monitor: a work queue that is not there (deleted) is an alarm, not a row left out.
    expected: WorkQueues,
  }), ...resourceAlarmConditions(nodes), ...nodeConditions(nodes, config.MONITOR_THRESHOLDS.for('*').noConsumerForMs)];
  const drain = (q: (typeof queues)[number]) => {
    const d = drainSecondsOf(q);
    return Number.isFinite(d) ? d : null;
  };
  return {
    source: 'local',
    note: `computed locally (${why}): alarms are conditions holding now, without the monitor's durations`,
    vhost,
    queues: queues.map((q) => ({ ...q, drainSeconds: drain(q), ...(q.headAgeSeconds !== undefined && { oldestAgeSeconds: q.headAgeSeconds }) })),
    alarms: conditions.map((c) => ({ alarm: c.alarm, queue: c.queue, summary: c.summary })),
  };
}

const seconds = (s: number | null, messages: number): string => (messages === 0 ? '-' : s === null ? 'never' : `${Math.round(s)}s`);
const oldest = (q: QueueRow): string => (q.messages === 0 ? '-' : q.oldestAgeSeconds === undefined ? '?' : `${q.oldestAgeIsLowerBound === true ? '≥' : ''}${Math.round(q.oldestAgeSeconds)}s`);
/** The dashboard's words: "watching since 04:58:12Z, alarms may still appear (until 05:00:12Z)". */
const clock = (iso: string): string => `${iso.slice(11, 19)}Z`;
const warmingNote = (w: NonNullable<StatusView['warmingUp']>): string =>
  `${w.watchingSince === null ? 'not watching yet: no poll has read the queues' : `watching since ${clock(w.watchingSince)}`}, alarms may still appear${w.until === null ? '' : ` (until ${clock(w.until)})`}`;

function printTable(view: StatusView): void {
  process.stdout.write(`vhost ${view.vhost}, ${view.note}\n\n`);
  printRows(
    view.queues.map((q) => ({
      queue: q.name,
      depth: q.messages,
      ready: q.ready,
      unacked: q.unacked,
      consumers: q.consumers,
      'publish/s': q.publishRate.toFixed(1),
      'ack/s': q.ackRate.toFixed(1),
      drain: seconds(q.drainSeconds, q.messages),
      oldest: oldest(q),
    })),
    false,
  );
  if (view.queues.some((q) => q.oldestAgeIsLowerBound === true && q.messages > 0)) {
    process.stdout.write('(≥: the monitor has not seen that queue empty since it started, so its messages may be much older)\n');
  }
  const warming = view.warmingUp === undefined ? undefined : warmingNote(view.warmingUp);
  process.stdout.write('\n');
  // A monitor warming up may not have seen for their delay conditions that held before it started.
  if (warming !== undefined) process.stdout.write(`${warming}\n`);
  else if (view.alarms.length === 0) process.stdout.write('no active alarms\n');
  if (view.alarms.length === 0) return;
  process.stdout.write(`${view.alarms.length} active alarm(s):\n`);
  const firing = (a: AlarmRow) => (a.firedAt === undefined ? 'now' : `${Math.round((Date.now() - a.firedAt) / 1000)}s`);
  printRows(view.alarms.map((a) => ({ alarm: a.alarm, queue: a.queue, firing: firing(a), summary: a.summary })), false);
}

/** Every Herald queue (depth, consumers, rates) and the active alarms: from the monitor, else computed here. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('every Herald queue (depth, in flight, consumers, rates, drain time) and active alarms')
    .option('--json', 'print JSON')
    .option('--local', 'do not ask the monitor; read RabbitMQ directly')
    .action(async (o: { json?: boolean; local?: boolean }) => {
      const config = readCliConfig();
      const vhost = vhostOf(config.AMQP_URL);
      const monitored = o.local === true ? '--local: the monitor was not asked' : await fromMonitor(config, vhost);
      const view = typeof monitored === 'string' ? await computedLocally(config, vhost, monitored) : monitored;
      if (o.json === true) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
      else printTable(view);
    });
}
