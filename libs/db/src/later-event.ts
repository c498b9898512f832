import { sql, type RawBuilder } from 'kysely';

/** How far ahead of the database's clock a reporter's time may run and still be taken at its word. */
export const CLOCK_SKEW_ALLOWANCE = sql`interval '5 minutes'`;

/**
 * Whether an incoming event beats the stored one (last event wins) — devices, topic memberships
 * and follows. Event times come from the reporter's clock, often the phone's, and are compared as
 * given, so a phone whose clock runs ahead still orders its own events. But a stored time later
 * than when it was applied (`storedAppliedAt`, the database's clock) by more than the allowance is
 * known to be from a clock running ahead: it would beat every event from a right clock until real
 * time caught up (a logout, another user's login on that phone). Such a stored event loses to an
 * event from a plausible clock (not ahead of now by more than the allowance) stamped after the
 * stored one was applied, which therefore happened after it. An incoming time that is itself far
 * ahead is compared as given only: the same fast clock's earlier event, delivered again, stays stale.
 * A null `storedAppliedAt` (rows from before migration 0029) compares as given only.
 */
export function laterEventSql(incoming: RawBuilder<unknown>, stored: RawBuilder<unknown>, storedAppliedAt: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(${incoming} >= ${stored}
    or (${stored} > ${storedAppliedAt} + ${CLOCK_SKEW_ALLOWANCE}
        and ${incoming} <= now() + ${CLOCK_SKEW_ALLOWANCE}
        and ${incoming} >= ${storedAppliedAt}))`;
}

/**
 * The event time to keep when an incoming event wins (laterEventSql). Normally its own. But one
 * that won only because the stored time was from a clock running ahead keeps that clock's time
 * (plus a millisecond): the fast clock's own earlier events, delivered again after it (a retried
 * register), must stay stale, and with the winner's earlier time kept they beat it and brought
 * back what it undid (a logout). The fast clock's later events still win, and so does a plausible
 * event after this one was applied (event_applied_at moves to now).
 */
export function keptEventTimeSql(incoming: RawBuilder<unknown>, stored: RawBuilder<unknown>): RawBuilder<Date> {
  return sql<Date>`case when ${incoming} >= ${stored} then ${incoming} else ${stored} + interval '1 millisecond' end`;
}
