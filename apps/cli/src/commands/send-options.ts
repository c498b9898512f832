import type { DeliverAt, JobAudience } from '@herald/contracts';

export interface ScheduleFlags {
  deliverAt?: string;
  localTime?: string;
  date?: string;
  jitter?: string;
  expiresAfter?: string;
}

/** `--deliver-at` or `--local-time [--date] [--jitter]`, either with `--expires-after`, as the job's deliverAt (the contract checks each value). */
export function deliverAtFromFlags(o: ScheduleFlags): DeliverAt | undefined {
  if (o.deliverAt !== undefined && o.localTime !== undefined) throw new Error('give --deliver-at (an instant) or --local-time (a wall-clock time), not both');
  if (o.localTime === undefined && (o.date !== undefined || o.jitter !== undefined)) throw new Error('--date and --jitter go with --local-time');
  if (o.deliverAt === undefined && o.localTime === undefined && o.expiresAfter !== undefined) throw new Error('--expires-after goes with --deliver-at or --local-time');
  const after = o.expiresAfter === undefined ? {} : { expiresAfter: o.expiresAfter };
  if (o.deliverAt !== undefined) return { at: o.deliverAt, ...after };
  if (o.localTime === undefined) return undefined;
  return { localTime: o.localTime, ...(o.date !== undefined && { date: o.date }), ...(o.jitter !== undefined && { jitter: o.jitter }), ...after };
}

/** A flag's whole number, or a one-line error naming the flag (the contract then checks its range). */
export function wholeNumber(flag: string, raw: unknown): number {
  const text = String(raw);
  if (!/^\d+$/.test(text)) throw new Error(`${flag} must be a whole number, got "${text}"`);
  return Number(text);
}

export interface TargetFlags {
  user?: string[];
  topic?: string;
  followersOf?: string;
  broadcast?: boolean;
  segment?: string;
  activeWithinDays?: string;
  mostRecent?: string;
}

/** Whom `herald send` addresses: `--user` (one or more), or an audience (the contract checks each value). */
export function targetFromFlags(o: TargetFlags): { userId: string } | { userIds: string[] } | { audience: JobAudience } {
  const kinds = [o.user !== undefined, o.topic !== undefined, o.followersOf !== undefined, o.broadcast === true].filter(Boolean).length;
  if (kinds !== 1) throw new Error('give exactly one of --user, --topic, --followers-of or --broadcast');
  if (o.followersOf === undefined && (o.activeWithinDays !== undefined || o.mostRecent !== undefined)) throw new Error('--active-within-days and --most-recent go with --followers-of');
  if (o.user !== undefined) {
    if (o.segment !== undefined) throw new Error('--segment goes with --topic, --followers-of or --broadcast');
    return o.user.length === 1 ? { userId: o.user[0] as string } : { userIds: o.user };
  }
  return {
    audience: {
      ...(o.topic !== undefined && { topic: o.topic }),
      ...(o.followersOf !== undefined && { followersOf: o.followersOf }),
      ...(o.broadcast === true && { broadcast: true }),
      ...(o.activeWithinDays !== undefined && { activeWithinDays: wholeNumber('--active-within-days', o.activeWithinDays) }),
      ...(o.mostRecent !== undefined && { mostRecent: wholeNumber('--most-recent', o.mostRecent) }),
      ...(o.segment !== undefined && { segment: o.segment }),
    },
  };
}
