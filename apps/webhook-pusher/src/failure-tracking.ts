import type { SubscriptionRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { WebhookMetrics } from './webhook-metrics.ts';
import type { SubscriptionCache } from './subscription-cache.ts';

export interface FailureTracking {
  store: {
    noteFailure(id: string, at: Date): Promise<Date | undefined>;
    noteSuccess(ids: readonly string[]): Promise<void>;
    disable(id: string, reason: string, failingSince?: Date): Promise<boolean>;
  };
  /** WEBHOOK_DISABLE_AFTER_MS */
  disableAfterMs: number;
  /** A delivery's last attempt (PUSHER_RETRY_DELAYS_MS' length + 1): a transient failure then is parked. */
  lastAttempt: number;
}

type Result = { kind: string; reason?: string; status?: number };

/**
 * Answers that refuse one payload, not the endpoint (RFC 9110: 400 Bad Request, 409 Conflict, 422
 * Unprocessable Content): the endpoint works, so they neither start a failing spell nor disable it.
 * Other 4xx and redirects (401/403 signature refused, 404 no such route, 410 Gone, a moved URL)
 * refuse every delivery alike.
 */
const PAYLOAD_REFUSALS = new Set([400, 409, 422]);
type Deps = { tracking: FailureTracking; subscriptions: SubscriptionCache; webhookMetrics: WebhookMetrics; logger: Logger; now?: () => Date };

/**
 * A subscription is failing from its first failed delivery until its next success. One failing
 * for longer than disableAfterMs is disabled once a delivery to it is given up (its last attempt
 * failed, or the receiver refused it for good): not on a failure that will be retried, since a
 * failing spell may start long before, with nothing tried since (down for a while on Monday, no
 * change until Tuesday): the retry that succeeds ends it. Disabled, fan-out stops matching it,
 * queued deliveries for it are parked, and it is alarmed: an error log and
 * herald_webhook_subscriptions_disabled_total.
 * Every success clears the failure time in the database, whatever the (cached, perhaps stale) row
 * says: another pusher may have recorded the failure a moment ago. A batch with both a success and
 * a failure for one subscription clears it, then starts a new failing spell at this batch: an
 * endpoint that fails a few requests in every batch keeps working and is not disabled.
 * Best effort: a database hiccup here must not fail the deliveries themselves.
 */
export async function noteResults(sent: ReadonlyArray<{ sub: SubscriptionRow; attempt: number }>, results: readonly Result[], deps: Deps): Promise<void> {
  const succeeded = new Set<string>();
  const failed = new Map<string, { reason: string; givenUp: boolean }>();
  sent.forEach(({ sub, attempt }, i) => {
    const r = results[i];
    if (r?.kind === 'delivered') succeeded.add(sub.id);
    if ((r?.kind !== 'transient' && r?.kind !== 'permanent') || r.reason === undefined) return;
    if (r.kind === 'permanent' && r.status !== undefined && PAYLOAD_REFUSALS.has(r.status)) return;
    const givenUp = r.kind === 'permanent' || attempt >= deps.tracking.lastAttempt;
    // One given up in the batch decides; the reason is the latest failure's.
    failed.set(sub.id, { reason: r.reason, givenUp: givenUp || failed.get(sub.id)?.givenUp === true });
  });
  try {
    // One statement, which writes only rows that were failing.
    if (succeeded.size > 0) await deps.tracking.store.noteSuccess([...succeeded]);
    const at = deps.now?.() ?? new Date();
    await Promise.all([...failed].map(([id, f]) => noteFailure(id, f, at, deps)));
  } catch (err) {
    deps.logger.warn({ err }, 'could not record webhook subscription health');
  }
}

async function noteFailure(id: string, { reason, givenUp }: { reason: string; givenUp: boolean }, at: Date, deps: Deps): Promise<void> {
  const { tracking } = deps;
  const since = await tracking.store.noteFailure(id, at);
  if (!givenUp || since === undefined || at.getTime() - since.getTime() < tracking.disableAfterMs) return;
  const why = `endpoint failing since ${since.toISOString()} (last: ${reason})`;
  if (!(await tracking.store.disable(id, why, since))) return;
  deps.subscriptions.markDisabled(id);
  deps.webhookMetrics.disabled.inc();
  deps.logger.error({ subscriptionId: id, failingSince: since.toISOString(), reason, alarm: 'webhook-subscription-disabled' }, 'webhook subscription disabled: its endpoint kept failing');
}
