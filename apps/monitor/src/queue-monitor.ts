import type { Logger } from '@herald/logging';
import type { QueueCounts } from '@herald/messaging';
import {
  activeConditions,
  nodeConditions,
  resourceAlarmConditions,
  AlarmTracker,
  drainSecondsOf,
  longestDelayMs,
  unreachableCondition,
  type Alarm,
  type AlarmCondition,
  type AlarmTransition,
  type AnnouncedFiring,
  type ManagementApi,
  type NodeResources,
  type PendingAlarm,
  type QueueSnapshot,
  type ThresholdConfig,
} from '@herald/monitoring';
import type { History } from './history.ts';
import type { MonitorMetrics } from './monitor-metrics.ts';

/** A queue as the dashboard and `herald status` show it. */
export interface QueueStatus extends QueueSnapshot {
  /** The head message's age when the broker reports it, else an estimate (see README). */
  oldestAgeSeconds: number;
  /**
   * The estimate counts only from the monitor's first poll: it has not seen the queue empty since it
   * started, so the messages may have waited much longer (a restart, a rollout).
   */
  oldestAgeIsLowerBound: boolean;
  /** Seconds to drain at the current ack rate; null when nothing is being acked. */
  drainSeconds: number | null;
}

export interface MonitorState {
  vhost: string;
  at: string | null;
  pollMs: number;
  /** The last poll's error, when it failed. */
  error: string | null;
  queues: QueueStatus[];
  alarms: Alarm[];
  /** Conditions holding that have not yet held for their delay. */
  pending: PendingAlarm[];
  /** When the first poll that read the queues ran; null before it. */
  watchingSince: string | null;
  /**
   * True until the monitor has watched for its longest alarm delay: a condition that held before it
   * started (or before RabbitMQ first answered) may still become an alarm, so none firing is not yet
   * all clear.
   */
  warmingUp: boolean;
  /** When warming up ends (null before the first poll read the queues). */
  warmingUpUntil: string | null;
}

/** Live ready and consumer counts per queue (AMQP passive declares); missing queues left out. */
export type LiveCounts = (queues: readonly string[]) => Promise<Map<string, QueueCounts>>;

export interface QueueMonitorDeps {
  api: ManagementApi;
  /**
   * Overlays the management API's statistics, which lag by up to its collection interval (5 s by
   * default), with live depth and consumer counts, so backlog and no-consumer alarms are not late.
   */
  live?: LiveCounts;
  vhost: string;
  pollMs: number;
  thresholds: ThresholdConfig;
  /** Device pushes a message of this queue may carry (the backlog alarm counts them; see RuleInput). */
  pushesPerMessage?: (queue: string) => number;
  /** The work queues the topology declares (the queue-missing alarm; see RuleInput). */
  expected?: readonly string[];
  history: History;
  metrics: MonitorMetrics;
  logger: Logger;
  /** Conditions from outside the broker (scheduled-overdue), evaluated with the queues' at each poll. */
  otherConditions?: () => readonly AlarmCondition[];
  /**
   * Alarms said firing before this monitor started (announced_alarms): one whose condition still
   * holds shows firing from the first poll that sees it, with its first firing time.
   */
  announced?: readonly AnnouncedFiring[];
  /**
   * Whether this instance has read what tells whether an announced alarm's condition holds (see
   * alarm-announcer.ts seenSince); until then, it is not taken as ended. Default: a poll read the queues.
   */
  seen?: (alarm: { alarm: string; queue: string }, now: number) => boolean;
  /** Every alarm that fires or resolves (log, metrics and webhook are wired by the caller). */
  announce: (t: AlarmTransition) => void;
  /** After each poll, whether it read the queues or not. */
  afterPoll?: () => void;
}

export interface QueueMonitor {
  state(): MonitorState;
  /** Whether the alarm's condition held at the last poll (firing, or waiting out its delay). */
  holds(alarm: { alarm: string; queue: string }): boolean;
  /** When the first poll that read the queues ran (epoch ms), or 0. */
  pollingSince(): number;
  /** True until a poll reads the queues, and from a failed one until one does (herald_monitor_blind): its alarms are its last view. */
  blind(): boolean;
  stop(): Promise<void>;
}

/**
 * Tracks since when each queue has been non-empty, for the oldest-message estimate. A queue already
 * non-empty at the monitor's first poll may have been so for hours (a restart during an outage):
 * until the monitor sees it empty, the time since that poll is only a lower bound.
 *
 * A queue busy all the time (a pusher's prefetch held unacked, push.fanout through a long fan-out)
 * is never seen empty, so the time since it was is hours: while its consumers ack, the estimate is
 * depth / ack rate. When they pause (a PostgreSQL failover, a RabbitMQ memory alarm, a slow chunk:
 * an ack rate of 0 for a minute), the oldest message is the one that was oldest at the last poll that
 * saw acks, and has waited since: that poll's estimate plus the time since it, never the hours since
 * the queue was last empty (which made oldest-message fire, "waited 2h 40m", on a minute's pause).
 */
class AgeEstimator {
  private readonly nonEmptySince = new Map<string, number>();
  /** Queues whose present non-empty spell began while the monitor watched. */
  private readonly watchedFromStart = new Set<string>();
  /** Per queue, the last poll of its present non-empty spell that saw acks: when, its estimate then (seconds), and depth / ack rate as read. */
  private readonly lastDraining = new Map<string, { at: number; seconds: number; raw: number }>();

  /** `firstPoll`: the first poll that read the queues. */
  estimate(q: QueueSnapshot, now: number, firstPoll: boolean): Pick<QueueStatus, 'oldestAgeSeconds' | 'oldestAgeIsLowerBound'> {
    // Empty, or first seen after the first poll (declared since): nothing in it predates the watch.
    if (q.messages === 0 || (!firstPoll && !this.nonEmptySince.has(q.name))) this.watchedFromStart.add(q.name);
    if (q.messages === 0) {
      this.nonEmptySince.delete(q.name);
      this.lastDraining.delete(q.name);
      return { oldestAgeSeconds: 0, oldestAgeIsLowerBound: false };
    }
    const since = this.nonEmptySince.get(q.name) ?? now;
    this.nonEmptySince.set(q.name, since);
    if (q.headAgeSeconds !== undefined) return { oldestAgeSeconds: q.headAgeSeconds, oldestAgeIsLowerBound: false };
    const sinceNonEmpty = (now - since) / 1000;
    if (q.ackRate > 0) {
      // The oldest message ages a second a second at most: a rate sampled as acks stopped (a part of
      // an interval's) would read a drain time many times the real one, and last through the pause.
      // Bounded by the last reading as read, not as bounded: a reading too low (a burst of acks as
      // consumers come back) then holds one poll, not until the age has grown back to the truth.
      const before = this.lastDraining.get(q.name);
      const raw = q.messages / q.ackRate;
      this.lastDraining.set(q.name, { at: now, seconds: before === undefined ? raw : Math.min(raw, before.raw + (now - before.at) / 1000), raw });
    }
    const draining = this.lastDraining.get(q.name);
    const drainAge = draining === undefined ? undefined : draining.seconds + (now - draining.at) / 1000;
    if (drainAge !== undefined && drainAge < sinceNonEmpty) return { oldestAgeSeconds: drainAge, oldestAgeIsLowerBound: false };
    return { oldestAgeSeconds: sinceNonEmpty, oldestAgeIsLowerBound: !this.watchedFromStart.has(q.name) };
  }
}

/**
 * A queue's statistics with its live ready and consumer counts laid over. A parked queue has no
 * consumer of its own: its unacked messages are an operator's listing or replay holding them a
 * moment, which the live ready count sees at once and the statistics (up to 5 s old) later. Its
 * depth is the larger of the live ready count and the statistics' depth, never their sum with a
 * stale unacked count: a dip while a listing held them (kept as the window's smallest depth) or a
 * double count just after it (ready again, the statistics still saying unacked) made
 * parked-growing fire with nothing parked. A real drop (a replay, a purge) shows once the
 * statistics do; a new park at once.
 */
export function withLive(q: QueueSnapshot, live: Pick<QueueCounts, 'ready' | 'consumers'>): QueueSnapshot {
  const messages = q.kind === 'parked' ? Math.max(live.ready, q.messages) : live.ready + q.unacked;
  return { ...q, ready: live.ready, messages, consumers: live.consumers };
}

const byFiredAt = (a: Alarm, b: Alarm): number => a.firedAt - b.firedAt || a.queue.localeCompare(b.queue) || a.alarm.localeCompare(b.alarm);

/** Polls every queue each `pollMs`, keeps history, and turns conditions into alarms. */
export function startQueueMonitor(deps: QueueMonitorDeps): QueueMonitor {
  const tracker = new AlarmTracker(deps.announced);
  const ages = new AgeEstimator();
  const warmUpMs = longestDelayMs(deps.thresholds);
  let queues: QueueStatus[] = [];
  let lastConditions: AlarmCondition[] = [];
  let at: number | null = null;
  let firstAt = 0;
  let error: string | null = null;

  const evaluate = (now: number, conditions: AlarmCondition[]): void => {
    const seen = (alarm: { alarm: string; queue: string }): boolean => deps.seen?.(alarm, now) ?? at !== null;
    for (const t of tracker.update(now, [...conditions, ...(deps.otherConditions?.() ?? [])], seen)) deps.announce(t);
  };

  const onSnapshots = (now: number, snapshots: QueueSnapshot[]): void => {
    queues = snapshots.map((q) => {
      const drain = drainSecondsOf(q);
      return { ...q, ...ages.estimate(q, now, now === firstAt), drainSeconds: Number.isFinite(drain) ? drain : null };
    });
    const parkedBaseline = (queue: string, windowMs: number) => deps.history.minSince(queue, now - windowMs);
    const oldest = new Map(queues.map((q) => [q.name, { seconds: q.oldestAgeSeconds, lowerBound: q.oldestAgeIsLowerBound }]));
    lastConditions = [
      ...activeConditions({
        queues: snapshots,
        thresholds: deps.thresholds,
        parkedBaseline,
        oldestAge: (queue) => oldest.get(queue),
        ...(deps.pushesPerMessage !== undefined && { pushesPerMessage: deps.pushesPerMessage }),
        ...(deps.expected !== undefined && { expected: deps.expected }),
      }),
      ...resourceAlarmConditions(nodes),
      // A node down waits as long as rabbitmq-unreachable: the "*" no-consumer delay.
      ...nodeConditions(nodes, deps.thresholds.for('*').noConsumerForMs),
    ];
    deps.history.add(now, snapshots);
    deps.metrics.recordQueues(queues, deps.pushesPerMessage);
    evaluate(now, lastConditions);
  };

  /** Blind: keep the other alarms as they were; raise rabbitmq-unreachable after the no-consumer delay. */
  const onFailure = (now: number, err: Error): void => {
    error = err.message;
    deps.logger.warn({ err }, 'queue poll failed');
    const forMs = deps.thresholds.for('*').noConsumerForMs;
    evaluate(now, [...lastConditions, unreachableCondition(forMs, err.message)]);
  };

  const withLiveCounts = async (snapshots: QueueSnapshot[]): Promise<QueueSnapshot[]> => {
    if (deps.live === undefined) return snapshots;
    let live: Awaited<ReturnType<LiveCounts>>;
    // At most a poll interval: a broker connection that is being re-established can keep the
    // channel waiting for good, and a poll that never ends would end the monitor's alarms with it.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no live queue counts within ${deps.pollMs} ms`)), deps.pollMs);
    });
    try {
      live = await Promise.race([deps.live(snapshots.map((q) => q.name)), late]);
    } catch (err) {
      deps.logger.debug({ err }, 'live queue counts unavailable; using the management API statistics');
      return snapshots;
    } finally {
      clearTimeout(timer);
    }
    return snapshots.map((q) => {
      const l = live.get(q.name);
      return l === undefined ? q : withLive(q, l);
    });
  };

  // The management API can take seconds to answer on a busy broker. A poll waits for it at most
  // one poll interval (except the first); meanwhile alarms run on the live counts laid over the
  // last statistics it returned, and its answer is used when it comes.
  let statistics: QueueSnapshot[] | undefined;
  let statisticsError: Error | undefined;
  let fetching: Promise<void> | undefined;
  const fetchStatistics = (): Promise<void> =>
    (fetching ??= deps.api
      .queues(deps.vhost)
      .then(
        (s) => {
          statistics = s;
          statisticsError = undefined;
        },
        (err: unknown) => {
          statisticsError = err as Error;
        },
      )
      .finally(() => {
        fetching = undefined;
      }));

  // The nodes (running, partitions, resource alarms), read beside the queues but never waited for (a
  // management API slow in a memory alarm must not hold the queue reads up); a poll evaluates the
  // last reading. A management user without the monitoring tag cannot read them, which costs only
  // their alarms (said once in the log); while they cannot be read, those keep their state, as the
  // others do while blind.
  let nodes: NodeResources[] = [];
  let nodesProblem: string | undefined;
  let readingNodes: Promise<void> | undefined;
  const readNodes = (): void => {
    const read = deps.api.nodes;
    if (read === undefined || readingNodes !== undefined) return;
    readingNodes = read()
      .then(
        (n) => {
          nodes = n;
          nodesProblem = undefined;
        },
        (err: unknown) => {
          if (nodesProblem === undefined) deps.logger.warn({ err }, "cannot read RabbitMQ's nodes, so nodes down, partitions and memory and disk alarms are not seen here (the management user needs the monitoring tag)");
          nodesProblem = (err as Error).message;
        },
      )
      .finally(() => {
        readingNodes = undefined;
      });
  };

  const poll = async (): Promise<void> => {
    const now = Date.now();
    readNodes();
    const fetched = fetchStatistics();
    if (statistics === undefined) await fetched;
    else await Promise.race([fetched, new Promise((r) => setTimeout(r, deps.pollMs))]);
    if (statisticsError !== undefined || statistics === undefined) {
      deps.metrics.recordPoll('failed');
      onFailure(now, statisticsError ?? new Error('no queue statistics yet'));
      return;
    }
    at = now;
    firstAt ||= now;
    error = null;
    onSnapshots(now, await withLiveCounts(statistics));
    // Not blind only once the gauges hold this poll's view: a scrape between would take the last
    // one's, kept while blind, for current.
    deps.metrics.recordPoll('ok');
  };

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const loop = (): void => {
    running = poll().finally(() => {
      deps.afterPoll?.();
      if (!stopped) timer = setTimeout(loop, deps.pollMs);
    });
  };
  loop();

  return {
    holds: (alarm) => tracker.holds(alarm),
    pollingSince: () => firstAt,
    blind: () => at === null || error !== null,
    state: () => ({
      vhost: deps.vhost,
      at: at === null ? null : new Date(at).toISOString(),
      pollMs: deps.pollMs,
      error,
      queues,
      alarms: tracker.active().sort(byFiredAt),
      pending: tracker.pending().sort((a, b) => a.firesAt - b.firesAt),
      watchingSince: firstAt === 0 ? null : new Date(firstAt).toISOString(),
      warmingUp: firstAt === 0 || Date.now() < firstAt + warmUpMs,
      warmingUpUntil: firstAt === 0 ? null : new Date(firstAt + warmUpMs).toISOString(),
    }),
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
      await fetching;
      await readingNodes;
    },
  };
}
