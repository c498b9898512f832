import { z } from 'zod';
import { SEGMENT_LIMITS, parseSegment } from './segment-filter.ts';

/**
 * The most recently active followers a job may ask for (`mostRecent`): the capped follower index's
 * size (libs/db follow-index.ts), which `mostRecent` reads. A larger one was taken and reached at
 * most this many, its job's audience size saying the number asked for.
 */
export const MAX_MOST_RECENT = 10_000;

/**
 * A job's audience: the third way to target a PushJob, beside `userId` and `userIds`. Exactly one
 * of `topic` (every subscriber of the app's topic), `followersOf` (the users following that user)
 * or `broadcast: true` (every device of the app). `activeWithinDays` and `mostRecent` narrow a
 * follower audience (read from the capped recently-active follower index); `segment` is a filter
 * over device attributes (see segment-filter.ts: `platform = "apns" and appVersion >= "5.0"`), with any
 * of the three. The demuxer expands it in keyset chunks (docs/adr/0013-fan-out-stage.md).
 */
export const JobAudience = z
  .strictObject({
    /** Every subscriber of this topic of the job's app. */
    topic: z.string().min(1).max(200).optional(),
    /** Every follower of this user. */
    followersOf: z.string().min(1).max(200).optional(),
    /** With followersOf: only followers active within this many days. */
    activeWithinDays: z.number().int().min(1).max(365).optional(),
    /** With followersOf: only the N most recently active followers. */
    mostRecent: z.number().int().min(1).max(MAX_MOST_RECENT).optional(),
    /** Every device of the app. */
    broadcast: z.literal(true).optional(),
    /** Filter text over device attributes (platform, appVersion, locale, language, timezone, lastSeen), see segment-filter.ts. */
    segment: z.string().min(1).max(SEGMENT_LIMITS.maxLength + 1).optional(),
  })
  .superRefine((a, ctx) => {
    const kinds = [a.topic, a.followersOf, a.broadcast].filter((k) => k !== undefined).length;
    if (kinds !== 1) ctx.addIssue({ code: 'custom', path: ['topic'], message: 'give exactly one of topic, followersOf or broadcast' });
    if (a.followersOf === undefined) {
      for (const field of ['activeWithinDays', 'mostRecent'] as const) {
        if (a[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'only with followersOf' });
      }
    }
    if (a.segment !== undefined) {
      const parsed = parseSegment(a.segment);
      if (!parsed.ok) ctx.addIssue({ code: 'custom', path: ['segment'], message: parsed.message.replace(/^segment: /, '') });
    }
  });
export type JobAudience = z.infer<typeof JobAudience>;

/** A short human description of an audience (logs, CLI, dashboard). */
export function describeAudience(a: JobAudience): string {
  const base =
    a.topic !== undefined
      ? `topic ${a.topic}`
      : a.followersOf !== undefined
        ? `followers of ${a.followersOf}${a.activeWithinDays !== undefined ? ` active within ${a.activeWithinDays} days` : ''}${a.mostRecent !== undefined ? ` (most recent ${a.mostRecent})` : ''}`
        : 'broadcast';
  return a.segment !== undefined ? `${base} where ${a.segment}` : base;
}
