/**
 * An event time no later than `now`, when the event is applied. Event times come from the clocks
 * of the systems that report them, often a phone's, and the last event wins (devices, topic
 * memberships, follows): one from the future (a clock running ahead) would beat every real event
 * until that time came. A hand-over of the token to another user, an unregister, and the
 * provider's report that the token died (its timestamp is later than the registration only if
 * the registration's time is true) would all be stale, so the former user or the dead token would
 * keep getting pushes; an unfollow or unsubscribe would not take.
 */
export function notAfter(at: string, now: Date): string {
  return Date.parse(at) > now.getTime() ? now.toISOString() : at;
}
