import { z } from 'zod';
import { Instant } from './instant.ts';
import { PlatformSchema as Platform } from './device-push.ts';
import { TokenKinds } from './device-token.ts';
import { AppId, JobCategory, JobObjectId, UserId } from './push-job.ts';
import { storable } from './storable-text.ts';

/**
 * The HTTP API's opt-out, mute and device-list bodies (issue 17). Every preference belongs to
 * one app: a team's key can only set, remove and see its own apps' preferences. Rows with
 * `app: null` predate per-app preferences (or were set by an operator with `--all-apps`) and
 * apply to every app.
 */

/** A job's category: opt-outs are by category. */
export const OptOutCategory = storable(JobCategory);
/** A job's object: mutes are by object ("thread:42"). */
export const MuteObjectId = storable(JobObjectId);

/** POST /v1/opt-outs and DELETE /v1/opt-outs: a user opted out of (back into) a category of an app. */
export const OptOutChange = z.strictObject({ app: AppId, userId: UserId, category: OptOutCategory });
export type OptOutChange = z.infer<typeof OptOutChange>;

/** POST /v1/mutes: no push about objectId for the user until `until` (omitted or null: until removed). */
export const MuteCreate = z.strictObject({
  app: AppId,
  userId: UserId,
  objectId: MuteObjectId,
  until: Instant.nullable().optional().describe('when the mute ends (must be in the future); omitted or null: until removed'),
});
export type MuteCreate = z.infer<typeof MuteCreate>;

/** DELETE /v1/mutes. */
export const MuteDelete = z.strictObject({ app: AppId, userId: UserId, objectId: MuteObjectId });
export type MuteDelete = z.infer<typeof MuteDelete>;

/** The query of GET /v1/opt-outs, /v1/mutes and /v1/devices: one user of one app. */
export const UserOfApp = z.strictObject({ app: AppId, userId: UserId });
export type UserOfApp = z.infer<typeof UserOfApp>;

/** The body of POST /v1/users:erase: the user of the app whose data Herald erases. */
export const UserErasureRequest = UserOfApp;
export type UserErasureRequest = UserOfApp;

/** What POST /v1/users:erase erased (counts), and what it kept because it is not the app's. */
export const UserErasureView = z.object({
  app: z.string(),
  userId: z.string(),
  erasedAt: z.string().describe("PostgreSQL's clock: an event of the user from before it (a register, subscribe or follow delivered late) is ignored from now on"),
  removed: z.object({
    devices: z.number().int().describe('devices unregistered, their user, time zone, language, app version, last-seen time and Web Push keys removed (the token stays, unattributed, as after an unregister)'),
    topicMemberships: z.number().int(),
    follows: z.number().int().describe('follow edges from and to the user'),
    optOuts: z.number().int(),
    mutes: z.number().int(),
    storedPushes: z.number().int().nullable().describe('pushes stored for later to the user; null when they could not be looked through now (see notices): they are not sent, and go when due'),
  }),
  kept: z.object({
    everyAppOptOuts: z.number().int().describe("the user's opt-outs of every app (an operator's): `herald erase-user --all-apps` removes them"),
    everyAppMutes: z.number().int(),
  }),
  notices: z.array(z.string()),
});
export type UserErasureView = z.infer<typeof UserErasureView>;

/** Most rows a list answers with (newest first); `truncated` says there were more. */
export const MAX_LIST_ROWS = 1000;

const Scope = z.string().nullable().describe('the app, or null: applies to every app (set before opt-outs were per app, or by an operator)');

export const OptOutView = z.object({ app: Scope, userId: z.string(), category: z.string(), createdAt: z.string() });
export type OptOutView = z.infer<typeof OptOutView>;
export const OptOutList = z.object({ optOuts: z.array(OptOutView), truncated: z.boolean() });
export type OptOutList = z.infer<typeof OptOutList>;

export const MuteView = z.object({ app: Scope, userId: z.string(), objectId: z.string(), until: z.string().nullable(), createdAt: z.string() });
export type MuteView = z.infer<typeof MuteView>;
/** Active mutes only: one whose `until` has passed changes nothing and is not listed. */
export const MuteList = z.object({ mutes: z.array(MuteView), truncated: z.boolean() });
export type MuteList = z.infer<typeof MuteList>;

/** DELETE answers: whether a row was there to remove. */
export const PreferenceRemoved = z.object({ removed: z.boolean() });

export const DeviceView = z.object({
  id: z.string(),
  app: z.string(),
  userId: z.string(),
  platform: Platform,
  /** Masked: the last 6 characters (the same mask as Herald's logs); the full token is never returned. */
  token: z.string().describe('masked: "…" and the last 6 characters; the full token is never returned'),
  tokenKind: z.enum(TokenKinds),
  timezone: z.string().nullable(),
  locale: z.string().nullable(),
  registeredAt: z.string().nullable(),
  /** null while the token is valid; else from when it is dead (unregistered, or the provider said so). */
  invalidSince: z.string().nullable(),
  invalidReason: z.string().nullable(),
});
export type DeviceView = z.infer<typeof DeviceView>;
export const DeviceList = z.object({ devices: z.array(DeviceView), truncated: z.boolean() });
export type DeviceList = z.infer<typeof DeviceList>;
