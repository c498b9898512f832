import { sql, type RawBuilder } from 'kysely';

/** How far ahead of the database's clock a reporter's time may run and still be taken at its word. */
export const CLOCK_SKEW_ALLOWANCE = sql`interval '5 minutes'`;

/**
 * Whether an incoming event beats the stored one (last event wins) — devices, topic memberships
 * and follows. Event times come from the reporter's clock, often the phone's, and are compared as
 * given, so a phone whose clock runs ahead still orders its own events. But a stored time later
 * than when it was applied (`storedAppliedAt`, the database's clock) is from a clock running ahead,
 * and it would beat the events of right clocks until real time caught up (a logout reported by the
 * API, another user's login on that phone). So an event stamped no later than now (a right clock)
 * and not before the stored one was applied, which therefore happened after it, wins; it is
 * compared with least(stored, storedAppliedAt). An event from a clock also ahead of now cannot be
 * ordered that way (the fast phone's own earlier register, delivered late, is stamped after its
 * logout was applied too): it takes this path only against a stored time ahead of its application
 * by more than the allowance, itself being plausible (not ahead of now by more than that).
 * And an incoming time ahead of now must also pass the highest time from a clock running ahead
 * overruled so far (`storedMark`, aheadMarkSql): the fast clock's earlier events, delivered again
 * after a right clock's won (a retried register after a logout), stay stale, while its later ones
 * pass, and right clocks' events go on ordering by their own times.
 * A null `storedAppliedAt` (rows from before migration 0029) compares as given only.
 */
export function laterEventSql(
  incoming: RawBuilder<unknown>,
  stored: RawBuilder<unknown>,
  storedAppliedAt: RawBuilder<unknown>,
  storedMark: RawBuilder<unknown>,
): RawBuilder<boolean> {
  return sql<boolean>`((${incoming} >= ${stored}
        and (${incoming} <= now() or ${storedMark} is null or ${incoming} > ${storedMark}))
    or (${stored} > ${storedAppliedAt}
        and ${incoming} >= ${storedAppliedAt}
        and (${incoming} <= now()
             or (${stored} > ${storedAppliedAt} + ${CLOCK_SKEW_ALLOWANCE} and ${incoming} <= now() + ${CLOCK_SKEW_ALLOWANCE}))))`;
}

/**
 * The mark to keep when an event wins: the highest time from a clock running ahead overruled so
 * far, the stored time joining it when it was later than when it was applied.
 */
export function aheadMarkSql(stored: RawBuilder<unknown>, storedAppliedAt: RawBuilder<unknown>, storedMark: RawBuilder<unknown>): RawBuilder<Date | null> {
  return sql<Date | null>`greatest(${storedMark}, case when ${stored} > ${storedAppliedAt} then ${stored} end)`;
}
