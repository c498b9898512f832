import {
  ChangeEvent,
  Exchanges,
  Queues,
  changeKindOf,
  changeSizeProblem,
  computeDiff,
  decodeWith,
  derivePushId,
  type Diff,
  type WebhookDelivery,
} from '@herald/contracts';
import { matchesResource, type SubscriptionPage, type SubscriptionRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import { webhookOwnerHeaders, type InboundMessage, type OutboundMessage, type Outcome, type Publisher } from '@herald/messaging';
import type { FanoutMetrics } from './fanout-metrics.ts';

export interface FanoutDeps {
  subscriptions: { findMatching(resources: ReadonlyArray<{ type: string; id: string }>, page: SubscriptionPage): Promise<SubscriptionRow[]> };
  publisher: Publisher;
  /** WEBHOOK_RESOURCE_TYPES: a change of another type is parked. */
  resourceTypes: readonly string[];
  metrics: FanoutMetrics;
  logger: Logger;
  now?: () => Date;
  /** WEBHOOK_MAX_CHANGE_BYTES: a larger change event is parked payload-too-large. */
  maxChangeBytes: number;
  /** Most matching subscriptions read at a time; MATCH_CHUNK by default. */
  matchChunk?: number;
  /** Most deliveries published at a time; PUBLISH_SLICE by default. */
  publishSlice?: number;
}

/**
 * Subscriptions are read in keyset chunks of this many, each chunk's deliveries published and
 * confirmed before the next is read: the per-team cap (WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM) bounds
 * one team, not the teams together, and a wildcard of every team matches every change.
 */
export const MATCH_CHUNK = 500;

/**
 * Deliveries published (and confirmed) at a time, and the most bytes of diff among them: a chunk
 * of subscriptions times a batch of events was one publish of up to 50,000 deliveries, each
 * carrying its event's diff, all held at once.
 */
export const PUBLISH_SLICE = 1_000;
export const PUBLISH_SLICE_BYTES = 8 * 1_048_576;

/** `bytes`: its diff's JSON, what each of its deliveries carries (at most WEBHOOK_MAX_CHANGE_BYTES). */
type Accepted = { index: number; event: ChangeEvent; diff: Diff; bytes: number };
const ack: Outcome = { kind: 'ack' };

/**
 * ChangeEvent → one WebhookDelivery per enabled subscription of the resource (its id or "*").
 * A batch of events costs one matching query per MATCH_CHUNK subscriptions; an event is acked only
 * after every delivery it produced is confirmed. notificationId = hash(event id, subscription id),
 * so an event handled twice (redelivery, published twice, a crash between chunks) yields the same
 * ids and the pusher's ledger sends each once.
 */
export function createFanoutHandler(deps: FanoutDeps) {
  const now = deps.now ?? (() => new Date());
  return async (messages: readonly InboundMessage[]): Promise<Outcome[]> => {
    const outcomes: Outcome[] = messages.map(() => ack);
    const accepted: Accepted[] = [];
    for (const [index, message] of messages.entries()) {
      const checked = admit(message, deps);
      if ('kind' in checked) outcomes[index] = checked;
      else accepted.push({ index, ...checked });
    }
    if (accepted.length === 0) return outcomes;
    const fanned = await fanOut(accepted, deps, now().toISOString());
    for (const [i, a] of accepted.entries()) {
      const { count, traced } = fanned[i] ?? { count: 0, traced: [] };
      if (count === 0) {
        if (a.event.trace === true) deps.logger.info({ trace: true, eventId: a.event.id }, 'trace: change has no subscribers');
        deps.metrics.changes.inc({ outcome: 'no-subscribers' });
        continue;
      }
      deps.metrics.notifications.inc({ resource_type: a.event.resource.type }, count);
      deps.metrics.changes.inc({ outcome: 'fanned-out' });
      if (a.event.trace === true) deps.logger.info({ trace: true, eventId: a.event.id, notifications: traced }, 'trace: change fanned out');
    }
    return outcomes;
  };
}

/** Per accepted event: how many deliveries it produced, and which (kept for a traced event only). */
type Fanned = { count: number; traced: Array<{ subscriptionId: string; notificationId: string }> };

/**
 * Publishes a delivery per (accepted event, matching subscription), reading the matches of the
 * whole batch MATCH_CHUNK at a time in id order (one query a chunk) and waiting for each chunk's
 * confirms before reading the next.
 */
async function fanOut(accepted: readonly Accepted[], deps: FanoutDeps, queuedAt: string): Promise<Fanned[]> {
  const chunk = deps.matchChunk ?? MATCH_CHUNK;
  const slice = deps.publishSlice ?? PUBLISH_SLICE;
  const resources = accepted.map((a) => a.event.resource);
  const fanned: Fanned[] = accepted.map(() => ({ count: 0, traced: [] }));
  let after: string | undefined;
  for (;;) {
    const subs = await deps.subscriptions.findMatching(resources, { limit: chunk, ...(after !== undefined && { after }) });
    let messages: OutboundMessage[] = [];
    let bytes = 0;
    for (const [i, a] of accepted.entries()) {
      for (const s of subs) {
        if (!matchesResource(s, a.event.resource)) continue;
        if (messages.length >= slice || bytes + a.bytes > PUBLISH_SLICE_BYTES) {
          await deps.publisher.publishMany(messages);
          messages = [];
          bytes = 0;
        }
        messages.push(deliveryMessage(a, s, queuedAt));
        bytes += a.bytes;
        const f = fanned[i];
        if (f === undefined) continue;
        f.count += 1;
        if (a.event.trace === true) f.traced.push({ subscriptionId: s.id, notificationId: notificationIdOf(a, s) });
      }
    }
    if (messages.length > 0) await deps.publisher.publishMany(messages);
    after = subs[subs.length - 1]?.id;
    if (subs.length < chunk || after === undefined) return fanned;
  }
}

function admit(message: InboundMessage, deps: FanoutDeps): Outcome | Omit<Accepted, 'index'> {
  const parsed = decodeWith(ChangeEvent, message.body);
  if (!parsed.ok) return park(deps, parsed.reason.startsWith('malformed') ? 'malformed-json' : 'schema', parsed.reason, message.messageId);
  const event = parsed.value;
  const diff = computeDiff(event.old, event.new);
  // Published past the API's 413 and the client library's check (another limit, a raw publish):
  // each delivery would carry its diff.
  const tooLarge = changeSizeProblem(event, deps.maxChangeBytes, diff);
  if (tooLarge !== undefined) return park(deps, 'payload-too-large', tooLarge.message, event.id);
  if (!deps.resourceTypes.includes(event.resource.type)) {
    return park(deps, 'unknown-resource-type', `unknown resource type "${event.resource.type}" (known: ${deps.resourceTypes.join(', ')})`, event.id);
  }
  // A resource created or deleted with no field set (or only nulls) is still news to its subscribers.
  if (Object.keys(diff).length === 0 && changeKindOf(event) === 'updated') {
    deps.metrics.changes.inc({ outcome: 'no-change' });
    deps.logger.info({ eventId: event.id, resource: event.resource }, 'change event changes no field: nobody notified');
    return ack;
  }
  return { event, diff, bytes: Buffer.byteLength(JSON.stringify(diff)) };
}

/**
 * One notification per (event, subscription). The event id is the publisher's idempotency key for
 * a change of one resource; it is read with the resource it changed and the team that published it
 * (publishedBy, when the HTTP API took it), so two resources, or two teams, using the same event id
 * are two changes, each notified, not one taken for the other's duplicate: a team that used
 * another's event id first can no longer silence that team's change. (Before 2026-11-29 the id
 * alone, before 2026-12-01 without the team: a change redelivered across those upgrades may be
 * notified once more, under its new id.)
 */
const notificationIdOf = (a: Accepted, s: SubscriptionRow): string =>
  derivePushId(`change:${JSON.stringify([a.event.resource.type, a.event.resource.id, a.event.id, ...(a.event.publishedBy === undefined ? [] : [a.event.publishedBy])])}`, s.id);

function deliveryMessage(a: Accepted, s: SubscriptionRow, queuedAt: string): OutboundMessage {
  const delivery: WebhookDelivery = {
    version: 1,
    notificationId: notificationIdOf(a, s),
    eventId: a.event.id,
    subscriptionId: s.id,
    resource: a.event.resource,
    change: changeKindOf(a.event),
    diff: a.diff,
    createdAt: a.event.occurredAt,
    queuedAt,
    ...(a.event.trace === true && { trace: true }),
    ...(a.event.publishedBy !== undefined && { publishedBy: a.event.publishedBy }),
  };
  // Whose it is, on every copy from the first: one the consumer parks at the delivery limit (its handler failing before any outcome) names them too.
  return { exchange: Exchanges.send, routingKey: Queues.webhookSend, body: delivery, messageId: delivery.notificationId, headers: webhookOwnerHeaders(s) };
}

function park(deps: FanoutDeps, code: string, reason: string, eventId: string | undefined): Outcome {
  deps.metrics.changes.inc({ outcome: 'parked' });
  deps.logger.warn({ eventId, code, reason }, 'change event parked');
  return { kind: 'park', code, reason };
}
