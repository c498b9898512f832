import { LANE_REFRESH_MS, readDownLanes, type Database, type OverdueCount } from '@herald/db';
import type { Logger } from '@herald/logging';
import { databaseUnreachableCondition, type AlarmCondition } from '@herald/monitoring';
import { TIMED_OUT, within } from '@herald/runtime';
import { certificateConditions } from './certificate-expiry.ts';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { holdingLanes, providerDownConditions } from './provider-down.ts';

/** Scheduled pushes waiting per upcoming hour (UTC), per platform; overdue ones count in the first hour. */
export interface ScheduledHour {
  hour: string;
  byPlatform: Record<string, number>;
  total: number;
}

export interface ScheduledCounts {
  at: string | null;
  hours: ScheduledHour[];
}

const HOURS_AHEAD = 24;

function byHour(rows: ReadonlyArray<{ platform: string; hour: Date; count: number }>): ScheduledHour[] {
  const hours = new Map<string, ScheduledHour>();
  for (const r of rows) {
    const key = r.hour.toISOString();
    const h = hours.get(key) ?? { hour: key, byPlatform: {}, total: 0 };
    h.byPlatform[r.platform] = (h.byPlatform[r.platform] ?? 0) + r.count;
    h.total += r.count;
    hours.set(key, h);
  }
  return [...hours.values()].sort((a, b) => a.hour.localeCompare(b.hour));
}

/** The pseudo-queue an overdue platform's alarm names: `scheduled.<platform>`. */
export const scheduledQueueOf = (platform: string): string => `scheduled.${platform}`;

/**
 * The scheduled-overdue alarm's conditions: per platform, stored pushes due longer ago than
 * `overdueMs` that no descheduler released (none runs, or one is stuck: a deployment without it,
 * scaled to 0; or a wave so large its release runs that late). Nothing else says so: the
 * deschedulers' own failure counter needs a running one.
 */
export function overdueConditions(overdue: readonly OverdueCount[], now: number, overdueMs: number): AlarmCondition[] {
  return overdue
    .filter((o) => now - o.earliestDueAt.getTime() > overdueMs)
    .map((o) => {
      const ageS = Math.round((now - o.earliestDueAt.getTime()) / 1000);
      return {
        alarm: 'scheduled-overdue' as const,
        queue: scheduledQueueOf(o.platform),
        forMs: 0,
        value: ageS,
        threshold: Math.round(overdueMs / 1000),
        summary: `${o.count >= OVERDUE_COUNT_CAP ? `over ${OVERDUE_COUNT_CAP}` : o.count} scheduled ${o.platform} pushes are overdue, the earliest due ${ageS} s ago: is the ${releaserOf(o.platform)} running, and keeping up?`,
      };
    });
}

const OVERDUE_COUNT_CAP = 100_000;

/** The service that releases a platform's scheduled pushes: the web-pusher releases web pushes itself. */
const releaserOf = (platform: string): string => (platform === 'web' ? 'web-pusher' : `${platform}-descheduler`);

/**
 * Reads `countsByHour`, the overdue pushes, the apps' APNs certificates and the provider lanes the
 * pushers take to be down every `pollMs`; a failed read keeps the last counts and conditions, is
 * logged, and adds database-unreachable, which fires once the reads have failed for
 * `unreachableForMs` (the overdue, certificate and provider-down alarms cannot fire while they
 * fail). `certificateWarnMs`: how long before a certificate expires its alarm fires;
 * `providerDownForMs`: how long a lane must stay down for its alarm.
 *
 * After failed reads, a lane down before them is held for `laneHoldMs` (a pusher's refresh, 30 s)
 * from the first good read though no row says so (holdingLanes): the pushers could not write
 * meanwhile either. A schema without provider_lanes (a monitor let through before `prepare`) blinds
 * provider-down alone, said once in the log at error: the other reads go on, and it is no
 * database-unreachable.
 */
export function startScheduledCounts(deps: {
  db: Database;
  pollMs: number;
  overdueMs: number;
  certificateWarnMs: number;
  providerDownForMs: number;
  /** How long after failed reads a lane down before them is held (default LANE_REFRESH_MS). */
  laneHoldMs?: number;
  unreachableForMs: number;
  metrics: MonitorMetrics;
  logger: Logger;
  /** The clock overdue is judged by (epoch ms): PostgreSQL's (DatabaseClock), as the deschedulers release by it. Default: this process's. */
  now?: () => number;
}) {
  const clockNow = deps.now ?? Date.now;
  let current: ScheduledCounts = { at: null, hours: [] };
  let found: AlarmCondition[] = [];
  let conditions: AlarmCondition[] = [];
  /** When the last read that set the conditions ended (epoch ms; 0: none yet). */
  let readAt = 0;
  /** The provider-down conditions of the last read of the lanes. */
  let lanes: AlarmCondition[] = [];
  /** A read failed since the last good one: the next good one holds the lanes down before. */
  let failed = false;
  /** Until when (epoch ms) a lane down before failed reads is held though not read. */
  let holdLanesUntil = 0;
  /** The schema has no provider_lanes (said once a spell). */
  let lanesMissing = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  /** The lanes read (undefined: the schema has no provider_lanes) as provider-down conditions, held after failed reads. */
  const readLanes = (rows: Awaited<ReturnType<typeof readDownLanes>>): void => {
    // Since when by this host's clock, which the queue monitor's alarms go by.
    const at = Date.now();
    if (failed) holdLanesUntil = at + (deps.laneHoldMs ?? LANE_REFRESH_MS);
    failed = false;
    if (rows === undefined) {
      if (!lanesMissing) {
        deps.logger.error(
          { schema: deps.db.schema, table: 'provider_lanes' },
          "the schema has no provider_lanes (migration 0043 not applied: has prepare run?): provider-down cannot be seen until it has; scheduled-overdue and the certificate alarms go on",
        );
      }
      lanesMissing = true;
      return;
    }
    if (lanesMissing) deps.logger.info({ schema: deps.db.schema }, 'provider_lanes is there now: provider-down is seen again');
    lanesMissing = false;
    const fresh = providerDownConditions(rows, deps.providerDownForMs, at);
    lanes = at < holdLanesUntil ? holdingLanes(fresh, lanes) : fresh;
  };
  const readOnce = async (): Promise<void> => {
    const rows = await deps.db.scheduled.countsByHour(undefined, HOURS_AHEAD);
    current = { at: new Date().toISOString(), hours: byHour(rows) };
    const totals = new Map<string, number>();
    for (const r of rows) totals.set(r.platform, (totals.get(r.platform) ?? 0) + r.count);
    deps.metrics.recordScheduled(totals);
    const now = clockNow();
    const overdue = await deps.db.scheduled.overdue(new Date(now - deps.overdueMs), OVERDUE_COUNT_CAP);
    deps.metrics.recordOverdue(overdue, now);
    const certificates = await deps.db.apps.apnsCertificates();
    deps.metrics.recordCertificates(certificates);
    readLanes(await readDownLanes(deps.db.kysely));
    found = [...overdueConditions(overdue, now, deps.overdueMs), ...certificateConditions(certificates, now, deps.certificateWarnMs), ...lanes];
    conditions = found;
    readAt = Date.now();
  };
  const read = async (): Promise<void> => {
    try {
      // At most a poll interval: a query on a connection a network partition left open would hang
      // for as long as TCP takes to give up, and the alarm meant for that with it.
      if ((await within(readOnce(), deps.pollMs)) === TIMED_OUT) throw new Error(`no answer from PostgreSQL within ${deps.pollMs} ms`);
    } catch (err) {
      deps.logger.warn({ error: (err as Error).message }, 'reading scheduled counts failed');
      failed = true;
      conditions = [...found, databaseUnreachableCondition(deps.unreachableForMs, (err as Error).message)];
    }
  };
  const loop = (): void => {
    running = read().finally(() => {
      if (!stopped) timer = setTimeout(loop, deps.pollMs);
    });
  };
  loop();
  return {
    current: (): ScheduledCounts => current,
    /** The scheduled-overdue, certificate and provider-down conditions of the last good read, and database-unreachable while reads fail (the queue monitor evaluates them with its own). */
    conditions: (): AlarmCondition[] => conditions,
    /** When the last good read (counts, overdue pushes, certificates, lanes) ended, epoch ms; 0 before the first. */
    readAt: (): number => readAt,
    stop: async (): Promise<void> => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
