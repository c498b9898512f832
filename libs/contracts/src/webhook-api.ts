import { z } from 'zod';
import { Instant } from './instant.ts';
import { storable } from './storable-text.ts';
import { ChangeEventFields, ResourceType, WILDCARD, notBothNull } from './webhook.ts';

/** POST /v1/subscriptions */
export const SubscriptionCreate = z.strictObject({
  /** Where notifications are POSTed: https (http only for localhost where the operator allows it). */
  callbackUrl: storable(z.string().min(1).max(2048)),
  /** One of the configured resource types (WEBHOOK_RESOURCE_TYPES), e.g. campaign or ad. */
  resourceType: ResourceType,
  /** The resource to watch, or "*" for every resource of the type. */
  resourceId: storable(z.string().min(1).max(200)),
  /** The HMAC-SHA256 key notifications are signed with; generated (and returned once) when absent. */
  secret: storable(z.string().min(16).max(256)).optional(),
});
export type SubscriptionCreate = z.infer<typeof SubscriptionCreate>;

export const SubscriptionView = z.object({
  id: z.uuid(),
  team: z.string(),
  callbackUrl: z.string(),
  resourceType: z.string(),
  /** "*": every resource of the type. */
  resourceId: z.string(),
  /** false once the pusher disabled it (its endpoint kept failing) or the team did. */
  enabled: z.boolean(),
  disabledAt: z.string().nullable(),
  disabledReason: z.string().nullable(),
  /** Since when deliveries to it have been failing without a success in between; null when healthy. */
  failingSince: z.string().nullable(),
  /** After a secret rotation: until when deliveries are signed with the previous secret too; null when not. */
  previousSecretExpiresAt: z.string().nullable(),
  createdAt: z.string(),
});
export type SubscriptionView = z.infer<typeof SubscriptionView>;

/** The create answer: the view plus the secret, shown this once. */
export const SubscriptionCreated = SubscriptionView.extend({ secret: z.string() });
export type SubscriptionCreated = z.infer<typeof SubscriptionCreated>;

/** The longest a rotated-out secret keeps signing (seconds): a week. */
export const MAX_PREVIOUS_SECRET_S = 7 * 86_400;

/** POST /v1/subscriptions/:id/rotate-secret */
export const SubscriptionSecretRotate = z.strictObject({
  /** The new secret; generated (and returned once) when absent. */
  secret: storable(z.string().min(16).max(256)).optional(),
  /**
   * How long deliveries keep a signature with the current secret beside the new one's (seconds;
   * default a day, 0 to drop it at once): the receiver switches to the new secret within it.
   */
  keepPreviousForS: z.number().int().min(0).max(MAX_PREVIOUS_SECRET_S).default(86_400),
});
export type SubscriptionSecretRotate = z.infer<typeof SubscriptionSecretRotate>;

/** Most subscriptions one GET /v1/subscriptions answers with (and its default page). */
export const MAX_SUBSCRIPTION_PAGE = 1000;

/** GET /v1/subscriptions?limit=&after= — keyset paging in id order. */
export const SubscriptionListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(MAX_SUBSCRIPTION_PAGE).default(MAX_SUBSCRIPTION_PAGE),
  /** The `next` of the previous page. */
  after: z.uuid().optional(),
});

export const SubscriptionList = z.object({
  subscriptions: z.array(SubscriptionView),
  /** Pass as `after` for the next page; null on the last page. */
  next: z.string().nullable(),
});
export type SubscriptionList = z.infer<typeof SubscriptionList>;

/** POST /v1/changes: a ChangeEvent; occurredAt defaults to when the API received it; publishedBy is the key's team, not the caller's to give. */
export const ChangePublish = ChangeEventFields.omit({ publishedBy: true }).extend({ occurredAt: Instant.optional() }).refine(notBothNull, {
  message: 'old and new cannot both be null',
  path: ['new'],
});
export type ChangePublish = z.infer<typeof ChangePublish>;

export const ChangeAccepted = z.object({ id: z.string() });

export const isWildcard = (resourceId: string): boolean => resourceId === WILDCARD;
