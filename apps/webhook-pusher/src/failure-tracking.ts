import type { SubscriptionRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { WebhookMetrics } from './webhook-metrics.ts';
import type { SubscriptionCache } from './subscription-cache.ts';

export interface FailureTracking {
  store: {
    noteFailure(id: string, at: Date, quietMs: number): Promise<Date | undefined>;
    noteSuccess(ids: readonly string[]): Promise<void>;
    disable(id: string, reason: string): Promise<boolean>;
  };
  /** WEBHOOK_DISABLE_AFTER_MS */
  disableAfterMs: number;
}

type Result = { kind: string; reason?: string };
type Deps = { tracking: FailureTracking; subscriptions: SubscriptionCache; webhookMetrics: WebhookMetrics; logger: Logger; now?: () => Date };

/**
 * A subscription is failing from its first failed delivery until its next success, or until a
 * quarter of disableAfterMs passes with no failure (nothing tried: the next failure starts a new
 * spell, so two failures a day apart with nothing sent between them are not a day of failing;
 * the retry schedule tries a failing delivery far more often). One failing
 * for longer than disableAfterMs is disabled (fan-out stops matching it; queued deliveries for it
 * are parked) and alarmed: an error log and herald_webhook_subscriptions_disabled_total.
 * Every success clears the failure time in the database, whatever the (cached, perhaps stale) row
 * says: another pusher may have recorded the failure a moment ago. A batch with both a success and
 * a failure for one subscription clears it, then starts a new failing spell at this batch: an
 * endpoint that fails a few requests in every batch keeps working and is not disabled.
 * Best effort: a database hiccup here must not fail the deliveries themselves.
 */
export async function noteResults(sent: ReadonlyArray<{ sub: SubscriptionRow }>, results: readonly Result[], deps: Deps): Promise<void> {
  const succeeded = new Set<string>();
  const failed = new Map<string, string>();
  sent.forEach(({ sub }, i) => {
    const r = results[i];
    if (r?.kind === 'delivered') succeeded.add(sub.id);
    if ((r?.kind === 'transient' || r?.kind === 'permanent') && r.reason !== undefined) failed.set(sub.id, r.reason);
  });
  try {
    // One statement, which writes only rows that were failing.
    if (succeeded.size > 0) await deps.tracking.store.noteSuccess([...succeeded]);
    const at = deps.now?.() ?? new Date();
    await Promise.all([...failed].map(([id, reason]) => noteFailure(id, reason, at, deps)));
  } catch (err) {
    deps.logger.warn({ err }, 'could not record webhook subscription health');
  }
}

async function noteFailure(id: string, reason: string, at: Date, deps: Deps): Promise<void> {
  const { tracking } = deps;
  const since = await tracking.store.noteFailure(id, at, quietMsOf(tracking.disableAfterMs));
  if (since === undefined || at.getTime() - since.getTime() < tracking.disableAfterMs) return;
  const why = `endpoint failing since ${since.toISOString()} (last: ${reason})`;
  if (!(await tracking.store.disable(id, why))) return;
  deps.subscriptions.markDisabled(id);
  deps.webhookMetrics.disabled.inc();
  deps.logger.error({ subscriptionId: id, failingSince: since.toISOString(), reason, alarm: 'webhook-subscription-disabled' }, 'webhook subscription disabled: its endpoint kept failing');
}

/** The longest time between two failures of one failing spell: a quarter of the time that disables. */
export const quietMsOf = (disableAfterMs: number): number => disableAfterMs / 4;
