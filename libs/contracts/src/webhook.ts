import { z } from 'zod';
import { Instant } from './instant.ts';
import { JsonObject } from './provider-override.ts';
import { storable } from './storable-text.ts';

export const WILDCARD = '*';

/** A resource type name, e.g. `campaign`; which types exist is configuration (WEBHOOK_RESOURCE_TYPES). */
export const ResourceType = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'lower-case letters, digits, "_", "-" or "." (at most 64)');
/** A resource id; `*` is reserved for wildcard subscriptions. */
export const ResourceId = storable(z.string().min(1).max(200))
  .refine((id) => id !== WILDCARD, 'must not be "*" (that means every resource, only in a subscription)');

export const ResourceRef = z.strictObject({ type: ResourceType, id: ResourceId });
export type ResourceRef = z.infer<typeof ResourceRef>;

/**
 * A resource's state: a JSON object whose top-level fields are compared, at most MAX_JSON_DEPTH
 * levels deep (a deeper one could not be serialised again: JSON.stringify recurses). null: it did
 * not exist (created) or no longer does (deleted).
 */
const ResourceState = JsonObject.nullable();

/**
 * A change of one resource, as another team publishes it to `push.changes` (client library or
 * POST /v1/changes). `id` is the idempotency key: the same event published twice notifies each
 * subscription once.
 */
export const ChangeEventFields = z.strictObject({
  version: z.literal(1).default(1),
  id: storable(z.string().min(1).max(200)),
  resource: ResourceRef,
  old: ResourceState,
  new: ResourceState,
  occurredAt: Instant,
  /** Log each step (fan-out, every delivery attempt) at info level, as PushJob.trace does. */
  trace: z.boolean().optional(),
  /**
   * The team whose key published it through the HTTP API (set by the API, never taken from the
   * body; absent for an event published straight to RabbitMQ). Part of each notification's id, so
   * one team cannot make another's change look like a duplicate by using its event id first, and
   * given to receivers, who can tell whose change it is.
   */
  publishedBy: z.string().min(1).max(200).optional(),
});
export const notBothNull = (e: { old: unknown; new: unknown }): boolean => e.old !== null || e.new !== null;
const BOTH_NULL = { message: 'old and new cannot both be null', path: ['new'] };
export const ChangeEvent = ChangeEventFields.refine(notBothNull, BOTH_NULL);
export type ChangeEvent = z.infer<typeof ChangeEvent>;
export type ChangeEventInput = z.input<typeof ChangeEvent>;

/** What happened to the resource: it came to exist (old null), stopped existing (new null), or changed. */
export const ChangeKind = z.enum(['created', 'updated', 'deleted']);
export type ChangeKind = z.infer<typeof ChangeKind>;
export const changeKindOf = (e: { old: unknown; new: unknown }): ChangeKind => (e.old === null ? 'created' : e.new === null ? 'deleted' : 'updated');

/** Per changed top-level field, its old and new value (undefined fields are absent: null stands in). */
export const Diff = z.record(z.string(), z.object({ old: z.unknown(), new: z.unknown() }));
export type Diff = z.infer<typeof Diff>;

/** One notification for one subscription, as the webhook-fanout emits it to `push.webhook.send`. */
export const WebhookDelivery = z.strictObject({
  version: z.literal(1).default(1),
  /** Deterministic from (event id, subscription id): the ledger key and the receiver's dedupe key. */
  notificationId: z.uuid(),
  eventId: z.string().min(1).max(200),
  subscriptionId: z.uuid(),
  resource: ResourceRef,
  /** Absent in deliveries queued before 2026-12-03 (their receivers get no `change`). */
  change: ChangeKind.optional(),
  diff: Diff,
  /** When the change happened (the event's occurredAt): receivers order updates by it. */
  createdAt: Instant,
  /** When the fan-out queued it (end-to-end latency). */
  queuedAt: Instant,
  trace: z.boolean().optional(),
  /** The event's publishedBy: the team that published it through the HTTP API. */
  publishedBy: z.string().min(1).max(200).optional(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

/** The JSON body a receiver gets. */
export interface WebhookNotificationBody {
  id: string;
  eventId: string;
  createdAt: string;
  resource: ResourceRef;
  /** created, updated or deleted: a deletion's diff alone reads like fields set to null. */
  change?: ChangeKind;
  diff: Diff;
  /** The team that published the change through the HTTP API (absent when published straight to RabbitMQ). */
  publishedBy?: string;
}

export const webhookBodyOf = (d: WebhookDelivery): WebhookNotificationBody => ({
  id: d.notificationId,
  eventId: d.eventId,
  createdAt: d.createdAt,
  resource: d.resource,
  ...(d.change !== undefined && { change: d.change }),
  diff: d.diff,
  ...(d.publishedBy !== undefined && { publishedBy: d.publishedBy }),
});
