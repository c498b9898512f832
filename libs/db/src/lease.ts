import { sql, type Kysely } from 'kysely';
import type { Logger } from '@herald/logging';
import type { HeraldTables } from './tables.ts';

export interface LeaseOptions {
  /** What the lease is for, e.g. 'monitor-alarms'; one holder per name per schema. */
  name: string;
  /** Who asks: unique per process (host, pid and a random part). */
  holder: string;
  /** How long a renewal holds; the holder renews every third of it. */
  ttlMs: number;
  logger?: Logger;
  /** Told when this process gains or loses the lease. */
  onChange?: (held: boolean) => void;
  /**
   * While true, this process stands by (the monitor: blind to RabbitMQ) and leaves the lease to one
   * that does not. With this option, a process not standing by that finds the lease another's says
   * it wants it (row `<name>:ready`, renewed at each try). One standing by takes a free lease only
   * while no other has said so within ttlMs (one that has tries every third of it, so wins it
   * first), and stops renewing the lease it holds once another says so again after its first try
   * standing by (so not for a row left by one that went on standby at the same time): the row runs
   * out within ttlMs and the other takes it. With no other wanting it, it takes and keeps the lease
   * as if it did not stand by.
   */
  standBy?: () => boolean;
}

export interface Lease {
  /** True while this process holds the lease (with a margin before it could run out). */
  held(): boolean;
  /**
   * True while the last attempt to take or renew the lease failed (the database did not answer):
   * nobody can tell who holds it. Work that must not go undone while the database is down (an
   * alarm saying so) may be done by every instance then.
   */
  unknown(): boolean;
  /** Stop renewing and give the lease up, so another instance takes it at once. */
  stop(): Promise<void>;
}

/**
 * Takes (or renews) lease `name` for `holder` for `ttlMs`: true when it is `holder`'s now, false
 * while another's has not expired. `acquired_at` moves only when the holder changes.
 */
export async function takeLeaseRow(db: Kysely<HeraldTables>, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const { rows } = await sql<{ holder: string }>`
    insert into leases (name, holder, expires_at) values (${name}, ${holder}, now() + ${`${ttlMs} milliseconds`}::interval)
    on conflict (name) do update
      set holder = excluded.holder,
          expires_at = excluded.expires_at,
          acquired_at = case when leases.holder = excluded.holder then leases.acquired_at else now() end
      where leases.holder = excluded.holder or leases.expires_at < now()
    returning holder`.execute(db);
  return rows.length > 0;
}

/** Says `holder`, not standing by, wants lease `name` (LeaseOptions.standBy) for `ttlMs`. */
async function sayReady(db: Kysely<HeraldTables>, name: string, holder: string, ttlMs: number): Promise<void> {
  await sql`
    insert into leases (name, holder, expires_at) values (${`${name}:ready`}, ${holder}, now() + ${`${ttlMs} milliseconds`}::interval)
    on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at`.execute(db);
}

/** When another than `holder` last said it wants lease `name`: its row's expiry (epoch ms), or undefined when none has within its ttl. */
async function readyOther(db: Kysely<HeraldTables>, name: string, holder: string): Promise<number | undefined> {
  const { rows } = await sql<{ expires_at: Date }>`select expires_at from leases where name = ${`${name}:ready`} and holder <> ${holder} and expires_at > now()`.execute(db);
  return rows[0]?.expires_at.getTime();
}

/**
 * One row per lease: taken when free or expired, renewed by its holder, given up on stop. A row,
 * not a session advisory lock, so it works through PgBouncer in transaction mode and survives a
 * primary switch; a holder that dies is replaced within ttlMs. Local validity ends a tenth of the
 * ttl before the row's expiry, so two instances never both believe they hold it.
 */
export function holdLease(db: Kysely<HeraldTables>, opts: LeaseOptions): Lease {
  const { name, holder, ttlMs, logger } = opts;
  let validUntil = 0;
  let wasHeld = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failing = false;
  let running: Promise<void> = Promise.resolve();
  /** Standing by: the ready row's expiry at the last try (undefined: none, or not standing by then). */
  let readySeen: number | undefined;
  // A monotonic clock: a wall clock stepped back (an NTP correction) while renewals fail would hold the lease past the row's expiry.
  const held = (): boolean => !stopped && performance.now() < validUntil;
  const report = (): void => {
    const now = held();
    if (now === wasHeld) return;
    wasHeld = now;
    logger?.info({ lease: name, holder }, now ? 'lease taken: this instance does the once-only work' : 'lease lost: another instance does the once-only work');
    opts.onChange?.(now);
  };
  /** One try: whether the lease is this process's now. */
  const attempt = async (): Promise<boolean> => {
    if (opts.standBy?.() !== true) {
      readySeen = undefined;
      const taken = await takeLeaseRow(db, name, holder, ttlMs);
      if (!taken && opts.standBy !== undefined) await sayReady(db, name, holder, ttlMs);
      return taken;
    }
    const before = readySeen;
    readySeen = await readyOther(db, name, holder);
    if (readySeen === undefined || (held() && (before === undefined || readySeen === before))) return takeLeaseRow(db, name, holder, ttlMs);
    if (!held()) return false;
    // Another wants it and said so again since the last try: given up here, and no longer renewed,
    // so the row runs out within ttlMs and that one takes it. Not deleted: a delete answered late
    // (after the next try had renewed the row, this instance seeing again) freed a lease this
    // instance still took for its own, and the announcements it was still finishing (their
    // announced_alarms writes) would have met another's row.
    logger?.info({ lease: name, holder }, 'standing by: lease left to run out for an instance that wants it');
    return false;
  };
  // A renewal that gets no answer (a database that stops answering rather than refusing: a
  // partition, a failover caught half-way, a row lock) fails after a third of the ttl, so the lease
  // reads as unknown once it runs out rather than as another's; its late answer is ignored.
  const deadlineMs = ttlMs / 3;
  const renew = async (): Promise<void> => {
    const askedAt = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from PostgreSQL within ${deadlineMs} ms`)), deadlineMs);
    });
    try {
      const taken = await Promise.race([attempt(), late]);
      validUntil = taken ? askedAt + ttlMs * 0.9 : 0;
      failing = false;
    } catch (err) {
      failing = true;
      logger?.warn({ err, lease: name }, 'could not renew the lease; it holds until it runs out');
    } finally {
      clearTimeout(timer);
    }
    report();
  };
  const tick = (): void => {
    running = renew().finally(() => {
      if (!stopped) timer = setTimeout(tick, ttlMs / 3);
    });
  };
  tick();
  // A lease that runs out between renewals (the database did not answer) is reported when it does.
  const watch = setInterval(report, Math.max(100, ttlMs / 10));
  watch.unref();
  return {
    held,
    unknown: () => failing && !stopped && !held(),
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      clearInterval(watch);
      await running;
      // Its ready row too (LeaseOptions.standBy): it no longer wants the lease.
      await sql`delete from leases where name in (${name}, ${`${name}:ready`}) and holder = ${holder}`.execute(db).catch(() => undefined);
      report();
    },
  };
}
