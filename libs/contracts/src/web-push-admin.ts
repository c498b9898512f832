import { z } from 'zod';
import { AppId } from './push-job.ts';
import { vapidSubjectProblem } from './vapid-subject.ts';
import { WebPushHost } from './web-subscription.ts';

/** RFC 8292 §2.1: the `sub` claim, a contact for the push service's operators: a mailto: or https: URL on a reachable domain (vapid-subject.ts). */
export const VapidSubject = z
  .string()
  .max(1024)
  .superRefine((value, ctx) => {
    const problem = vapidSubjectProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/** POST /admin/apps/:id/vapid — the app's first VAPID key pair (Herald generates it), with its contact subject. */
export const VapidGenerate = z.strictObject({ subject: VapidSubject });
export type VapidGenerate = z.infer<typeof VapidGenerate>;

/**
 * What `vapid generate` warns of (ADR 0014): the app's existing subscriptions are bound to the key
 * they were made with, the web-pusher's process pair while the app had none of its own.
 */
export const vapidGenerateNotice = (app: string): string =>
  `existing subscriptions of app "${app}" keep the key they were made with: those made before now used the web-pusher's WEB_PUSH_VAPID_* pair ` +
  `and are still signed with it, so keep that pair set on every web-pusher until their browsers have subscribed again with the new public key ` +
  `(GET /v1/web-push/vapid-public-key, herald apps vapid show); new subscriptions use the new key`;

/** POST /admin/apps/:id/vapid/rotate — a new pair; the current one is kept as previous; optionally a new subject. */
export const VapidRotate = z.strictObject({
  subject: VapidSubject.optional(),
  /** Rotate even while browsers are subscribed with the previous key (it is forgotten: pushes to them park until they subscribe again). */
  force: z.boolean().optional(),
});
export type VapidRotate = z.infer<typeof VapidRotate>;

/** PATCH /admin/apps/:id/web-push — the contact subject and/or the push-service hosts (null: back to the default list). */
export const WebPushUpdate = z
  .strictObject({
    subject: VapidSubject.optional(),
    hosts: z.array(WebPushHost).min(1).max(100).nullable().optional(),
  })
  .refine((u) => u.subject !== undefined || u.hosts !== undefined, { message: 'give subject or hosts', path: ['subject'] });
export type WebPushUpdate = z.infer<typeof WebPushUpdate>;

/** An app's Web Push settings as the admin API and the CLI show them: public keys only, never a private one. */
export const WebPushView = z.object({
  app: z.string(),
  /** null until a key pair is generated. */
  vapid: z
    .object({
      publicKey: z.string(),
      /** The key pair before the last rotation, still used for subscriptions made under it. */
      previousPublicKey: z.string().nullable(),
      subject: z.string(),
    })
    .nullable(),
  hosts: z.array(z.string()),
  /** true when hosts is Herald's default list (the well-known browser push services). */
  defaultHosts: z.boolean(),
  credentialsVersion: z.number().int(),
  /** Warnings about the change just made (vapid generate: existing subscriptions keep their key). */
  notices: z.array(z.string()).optional(),
});
export type WebPushView = z.infer<typeof WebPushView>;

/** GET /v1/web-push/vapid-public-key — what a web front end subscribes with (`applicationServerKey`). */
export const VapidPublicKeyView = z.object({ app: z.string(), publicKey: z.string(), subject: z.string() });
export type VapidPublicKeyView = z.infer<typeof VapidPublicKeyView>;

/** Its query: the app, needed when the API key acts for more than one. */
export const VapidPublicKeyQuery = z.strictObject({ app: AppId.optional() });
