import { CLOCK_SKEW_ALLOWANCE_MS } from '@herald/contracts';
import { sql, type RawBuilder } from 'kysely';

/**
 * How far ahead of the database's clock a reporter's time may run and still be taken at its word:
 * CLOCK_SKEW_ALLOWANCE_MS (@herald/contracts, 5 minutes), the allowance the doors give a producer's
 * clock too (expiredWhenAccepted), as an SQL interval.
 */
export const CLOCK_SKEW_ALLOWANCE = sql.raw(`interval '${CLOCK_SKEW_ALLOWANCE_MS} milliseconds'`);

/**
 * Whether an incoming event beats the stored one (last event wins) — devices, topic memberships
 * and follows. Event times come from the reporter's clock, often the phone's, and are compared as
 * given, so a phone whose clock runs ahead still orders its own events. But a stored time later
 * than when it was applied (`storedAppliedAt`, the database's clock) by more than the allowance is
 * known to be from a clock running ahead: it would beat every event from a right clock until real
 * time caught up (a logout, another user's login on that phone). Such a stored event loses to an
 * event from a plausible clock (not ahead of now by more than the allowance) stamped after the
 * stored one was applied, which therefore happened after it. And an incoming time that is itself
 * far ahead must also pass the highest such time overruled so far (`storedMark`, aheadMarkSql):
 * the fast clock's earlier events, delivered again after a right clock's won (a retried register
 * after a logout), stay stale, while right clocks' events go on ordering by their own times.
 * A null `storedAppliedAt` (rows from before migration 0029) compares as given only.
 */
export function laterEventSql(
  incoming: RawBuilder<unknown>,
  stored: RawBuilder<unknown>,
  storedAppliedAt: RawBuilder<unknown>,
  storedMark: RawBuilder<unknown>,
): RawBuilder<boolean> {
  return sql<boolean>`((${incoming} >= ${stored}
        and (${incoming} <= now() + ${CLOCK_SKEW_ALLOWANCE} or ${storedMark} is null or ${incoming} > ${storedMark}))
    or (${stored} > ${storedAppliedAt} + ${CLOCK_SKEW_ALLOWANCE}
        and ${incoming} <= now() + ${CLOCK_SKEW_ALLOWANCE}
        and ${incoming} >= ${storedAppliedAt}))`;
}

/**
 * The mark to keep when an event wins: the highest fast-clock time overruled so far, the stored
 * time joining it when it was ahead of its application by more than the allowance. An event of the
 * stored time (the same one delivered again) overrules nothing: the mark stays.
 */
export function aheadMarkSql(incoming: RawBuilder<unknown>, stored: RawBuilder<unknown>, storedAppliedAt: RawBuilder<unknown>, storedMark: RawBuilder<unknown>): RawBuilder<Date | null> {
  return sql<Date | null>`case when ${incoming} = ${stored} then ${storedMark}
    else greatest(${storedMark}, case when ${stored} > ${storedAppliedAt} + ${CLOCK_SKEW_ALLOWANCE} then ${stored} end) end`;
}

/**
 * When the winning event was applied: now (`appliedNow`), except for an event of the stored time
 * (the same one delivered again), which keeps the first application's (rows from before migration
 * 0029, without one, take now). Moved to the redelivery, a fast clock's event applied again would
 * make every right clock's event stamped between the two applications (a logout) stale.
 */
export function appliedAtSql(incoming: RawBuilder<unknown>, stored: RawBuilder<unknown>, storedAppliedAt: RawBuilder<unknown>, appliedNow: RawBuilder<unknown>): RawBuilder<Date> {
  return sql<Date>`case when ${incoming} = ${stored} then coalesce(${storedAppliedAt}, ${appliedNow}) else ${appliedNow} end`;
}
