import type { AnnouncedAlarm, AnnouncedAlarmStore } from '@herald/db';
import type { Logger } from '@herald/logging';
import { AlarmKinds, type Alarm, type AlarmKind, type AlarmTransition } from '@herald/monitoring';
import { TIMED_OUT, within } from '@herald/runtime';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { webhookPayload, type AlarmWebhook } from './webhook.ts';

type AlarmKey = Pick<Alarm, 'queue'> & { alarm: string };

/** What this monitor instance sees at the end of a poll. */
export interface AlarmView {
  now: number;
  /** The alarms firing here. */
  active: readonly Alarm[];
  /** Whether the alarm's condition holds here (firing, or waiting out its delay). */
  holds(alarm: AlarmKey): boolean;
  /** Whether this instance has read, since `since`, what tells whether the alarm's condition holds. */
  seen(alarm: AlarmKey, since: number): boolean;
}

/** When this instance last read each source, for AlarmView.seen. */
export interface Evidence {
  /** The last poll that read the queues (epoch ms; 0: none yet). */
  polledAt: number;
  /** The first poll that read the queues. */
  pollingSince: number;
  /** When the last good read of the scheduled pushes (counts and overdue) ended. */
  readAt: number;
  /** A parked queue's growth window (parked-growing compares with its smallest depth within it). */
  parkedWindowMs(queue: string): number;
  /** How long a queue's oldest-message alarm needs watched (thresholds.ts oldestAgeWindowMs). */
  oldestAgeWindowMs(queue: string): number;
}

/**
 * Whether this instance has what it needs, read after `since`, to tell that an alarm's condition no
 * longer holds: the kinds read from PostgreSQL (scheduled pushes, APNs certificates, provider
 * lanes) a good read that a poll then evaluated; parked-growing a whole growth window of its own
 * polls (a restarted monitor has no history), oldest-message its age bound and delay of them (a
 * restarted monitor counts a queue's oldest message from its first poll); the others a poll of the
 * queues.
 */
export function seenSince(alarm: AlarmKey, since: number, e: Evidence, now: number): boolean {
  switch (alarm.alarm) {
    case 'scheduled-overdue':
    case 'apns-certificate-expiring':
    case 'apns-certificate-expired':
    case 'provider-down':
    case 'database-unreachable':
      return e.readAt > since && e.readAt <= e.polledAt;
    case 'parked-growing':
      return e.polledAt > since && e.pollingSince > 0 && now - e.pollingSince >= e.parkedWindowMs(alarm.queue);
    case 'oldest-message':
      return e.polledAt > since && e.pollingSince > 0 && now - e.pollingSince >= e.oldestAgeWindowMs(alarm.queue);
    default:
      return e.polledAt > since;
  }
}

const keyOf = (a: AlarmKey): string => `${a.alarm}\u0000${a.queue}`;
const isKind = (alarm: string): alarm is AlarmKind => (AlarmKinds as readonly string[]).includes(alarm);
const toAlarm = (a: AnnouncedAlarm): Alarm | undefined => (isKind(a.alarm) ? { ...a, alarm: a.alarm } : undefined);

/**
 * The alarms said firing before this monitor started (a restart, a rollout), for its tracker: one
 * still holding shows firing from the first poll, with its first firing time, not after its delay
 * again. A database that does not answer within `timeoutMs` must not keep the monitor from starting
 * (it is there to say so): it starts without them, saying what that costs.
 */
export async function announcedAtStart(store: Pick<AnnouncedAlarmStore, 'list'>, logger: Logger, timeoutMs: number): Promise<AnnouncedAlarm[]> {
  try {
    const listed = await within(store.list(), timeoutMs);
    if (listed === TIMED_OUT) throw new Error(`no answer from PostgreSQL within ${timeoutMs} ms`);
    return listed;
  } catch (err) {
    logger.warn({ err }, 'could not read the alarms announced before this start: those still firing show again only once their conditions have held for their delay');
    return [];
  }
}

export interface AlarmAnnouncer {
  /** A transition of this instance's alarms: to metrics, and said at once while nobody can tell who holds the lease. */
  announce(t: AlarmTransition): void;
  /** This instance took the alarms lease (`now`), or lost it (undefined). */
  leaseChanged(takenAt: number | undefined): void;
  /** The lease holder's round after each poll: say what fires that nobody said, and what ended that was said firing. */
  reconcile(view: AlarmView): Promise<void>;
  /** At shutdown: no more rounds or posts; waits for the round under way (then flush the webhook and the store). */
  stop(): Promise<void>;
  /** The store's writes under way (at shutdown, before the lease is given back). */
  flush(): Promise<void>;
}

/**
 * Every alarm that fires or resolves goes to metrics (every monitor instance keeps its gauges). The
 * one instance holding the alarms lease (a blind one leaves it to one that sees: main.ts,
 * LeaseOptions.standBy) says them — to the log and (when configured) the webhook —
 * by comparing what it sees with what was said (`announced_alarms`, kept in PostgreSQL): an alarm
 * firing that is not recorded is said firing, and recorded once delivered; one recorded whose
 * condition this instance has seen ended is said resolved, and then forgotten. So a monitor that
 * restarts or takes the lease over says neither a firing alarm twice nor nothing of one that ended
 * while nobody announced, and a post abandoned at shutdown is said again by the next. While the
 * database does not answer nobody can tell who holds the lease: every instance then says each
 * transition as it happens (a repeat rather than silence), recording nothing; so does the holder
 * while it cannot read what was said.
 */
export function alarmAnnouncer(deps: {
  vhost: string;
  logger: Logger;
  metrics: MonitorMetrics;
  webhook: AlarmWebhook | undefined;
  store: AnnouncedAlarmStore;
  /** True while this instance holds the alarms lease. */
  holds: () => boolean;
  /** True while nobody can tell who holds it (the database does not answer). */
  unknown: () => boolean;
  /** The longest a round waits for the table (a database that hangs must not stop the rounds); default 5 s. */
  readTimeoutMs?: number;
}): AlarmAnnouncer {
  /** Since when this instance holds the lease (Infinity: it does not): only what it read since counts. */
  let takenAt = Number.POSITIVE_INFINITY;
  /** Said, not yet recorded: not said again meanwhile. */
  const sending = new Set<string>();
  /** Fired here since the last round: one that ended before a round saw it firing is said all the same. */
  const fired = new Map<string, Alarm>();
  let reconciling = false;
  /** The round under way (awaited at stop). */
  let round: Promise<void> = Promise.resolve();
  let stopped = false;
  /** The holder could not read what was said at its last round: it says transitions as they happen until it can. */
  let unread = false;
  /** One store write at a time, in order: a resolve must not overtake the fire it follows. */
  let writing: Promise<void> = Promise.resolve();
  /** Said firing at once, recorded nowhere (the lease unknown, the table unread): this instance says their end too. */
  const direct = new Map<string, Alarm>();

  const log = (t: AlarmTransition): void => {
    const { alarm, queue, summary, value, threshold, since } = t.alarm;
    const fields = { alarm, queue, state: t.state, value, threshold, heldForMs: t.at - since };
    if (t.state === 'firing') deps.logger.warn(fields, `alarm firing: ${summary}`);
    else deps.logger.info(fields, `alarm resolved: ${alarm} on ${queue}`);
  };
  const record = (t: AlarmTransition, key: string): void => {
    const write = (): Promise<void> => (t.state === 'firing' ? deps.store.fired(t.alarm) : deps.store.resolved(t.alarm));
    writing = writing
      .then(write)
      .catch((err: unknown) => deps.logger.warn({ err, alarm: t.alarm.alarm, queue: t.alarm.queue, state: t.state }, 'could not record the announced alarm; it is said again'))
      .finally(() => sending.delete(key));
  };
  /** Said, then recorded once the webhook has it (or failed it after every attempt); one abandoned at shutdown is left for the next announcer. */
  const say = (t: AlarmTransition): void => {
    const key = keyOf(t.alarm);
    sending.add(key);
    log(t);
    if (deps.webhook === undefined) return record(t, key);
    deps.webhook.post(webhookPayload(t, deps.vhost), (outcome) => (outcome === 'abandoned' ? void sending.delete(key) : record(t, key)));
  };

  /** Said at once, recorded nowhere: while nobody can tell who holds the lease, or the holder cannot read what was said. */
  const sayNow = (t: AlarmTransition): void => {
    if (t.state === 'firing') direct.set(keyOf(t.alarm), t.alarm);
    else direct.delete(keyOf(t.alarm));
    log(t);
    deps.webhook?.post(webhookPayload(t, deps.vhost));
  };
  /** An alarm this instance said firing at once, still firing when the holder can record: recorded, not said again. */
  const adopt = (alarm: Alarm, key: string): void => {
    direct.delete(key);
    sending.add(key);
    record({ state: 'firing', alarm, at: alarm.firedAt }, key);
  };

  const reconcile = async (view: AlarmView): Promise<void> => {
    // Said and not yet recorded when the read began: its record may land after the read's snapshot.
    const inFlight = new Set(sending);
    let said: Map<string, AnnouncedAlarm>;
    try {
      const listed = await within(deps.store.list(), deps.readTimeoutMs ?? 5_000);
      if (listed === TIMED_OUT) throw new Error(`no answer from PostgreSQL within ${deps.readTimeoutMs ?? 5_000} ms`);
      said = new Map(listed.map((a) => [keyOf(a), a]));
    } catch (err) {
      if (!unread) {
        deps.logger.warn({ err }, 'could not read the announced alarms: saying alarms as they happen until it can');
        // A repeat rather than silence: what fires now, and what fired since the last round.
        for (const alarm of new Map([...fired, ...view.active.map((a): [string, Alarm] => [keyOf(a), a])]).values()) sayNow({ state: 'firing', alarm, at: view.now });
      }
      unread = true;
      fired.clear();
      return;
    }
    unread = false;
    if (stopped || !deps.holds()) return;
    // What the table holds is the holder's to end, whoever said it.
    for (const key of said.keys()) direct.delete(key);
    const busy = (key: string): boolean => inFlight.has(key) || sending.has(key);
    const firing = new Map(view.active.map((a) => [keyOf(a), a]));
    for (const [key, alarm] of [...fired, ...firing]) {
      if (said.has(key) || busy(key)) continue;
      if (direct.has(key)) adopt(alarm, key);
      else say({ state: 'firing', alarm, at: view.now });
    }
    fired.clear();
    for (const [key, a] of said) {
      const alarm = toAlarm(a);
      if (alarm === undefined || firing.has(key) || busy(key) || view.holds(a) || !view.seen(a, takenAt)) continue;
      say({ state: 'resolved', alarm, at: view.now });
    }
  };

  return {
    announce(t) {
      deps.metrics.recordAlarm(t);
      if (stopped) return;
      if (deps.unknown() || (unread && deps.holds()) || (t.state === 'resolved' && direct.has(keyOf(t.alarm)))) return sayNow(t);
      if (t.state === 'firing' && deps.holds()) fired.set(keyOf(t.alarm), t.alarm);
    },
    leaseChanged(at) {
      takenAt = at ?? Number.POSITIVE_INFINITY;
      fired.clear();
      unread = false;
    },
    reconcile(view) {
      if (stopped || reconciling || !deps.holds() || deps.unknown()) return Promise.resolve();
      reconciling = true;
      round = reconcile(view).finally(() => (reconciling = false));
      return round;
    },
    async stop() {
      stopped = true;
      await round;
    },
    flush: () => writing,
  };
}
