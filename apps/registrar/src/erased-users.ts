/** When each user of an app was last erased, by `${app}\0${userId}` (libs/db erasuresOf). */
export type ErasuresOf = (users: readonly { app: string; userId: string }[]) => Promise<Map<string, Date>>;

/** An event naming users of an app (a register's user, a topic member, a follow edge's two ends) at its event time. */
export interface UserEvent {
  app: string;
  users: readonly string[];
  eventAt: string;
}

/**
 * Which events name a user erased at or after the event's time (POST /v1/users:erase): stale, as an
 * event older than a device's last is. A register, subscribe or follow sent before the erasure and
 * delivered after it (a backlog, a retry, a parked message replayed) would otherwise bring the user's
 * data back. An event from after the erasure (the user signed up again) applies. One query a batch;
 * without `erasuresOf` (a registrar built without it), none is.
 */
export async function erasedEvents(events: readonly UserEvent[], erasuresOf: ErasuresOf | undefined): Promise<boolean[]> {
  const users = events.flatMap((e) => e.users.map((userId) => ({ app: e.app, userId })));
  if (erasuresOf === undefined || users.length === 0) return events.map(() => false);
  const erased = await erasuresOf(users);
  if (erased.size === 0) return events.map(() => false);
  return events.map((e) =>
    e.users.some((userId) => {
      const at = erased.get(`${e.app}\0${userId}`);
      return at !== undefined && Date.parse(e.eventAt) <= at.getTime();
    }),
  );
}
