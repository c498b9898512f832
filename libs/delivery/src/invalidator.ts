import { decodeWith, Invalidation, type Platform } from '@herald/contracts';
import { isDatabaseUnavailable, refusedValueReason, type InvalidationInput, type InvalidationResult } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { InboundMessage, Outcome } from '@herald/messaging';
import type { InvalidatorMetrics } from './invalidator-metrics.ts';

export interface InvalidatorDeps {
  platform: Platform;
  devices: { invalidateMany(invs: readonly InvalidationInput[]): Promise<InvalidationResult[]> };
  metrics: InvalidatorMetrics;
  logger: Logger;
}

type Decoded = { index: number; input: InvalidationInput };
type Park = Extract<Outcome, { kind: 'park' }>;

const ACK: Outcome = { kind: 'ack' };

function decode(message: InboundMessage, platform: Platform): InvalidationInput | Park {
  const parsed = decodeWith(Invalidation, message.body);
  if (!parsed.ok) {
    return { kind: 'park', code: parsed.reason.startsWith('malformed JSON') ? 'malformed-json' : 'schema', reason: parsed.reason };
  }
  const inv = parsed.value;
  if (inv.platform !== platform) {
    return { kind: 'park', code: 'wrong-platform', reason: `a ${inv.platform} invalidation reached the ${platform} invalidator` };
  }
  return {
    app: inv.app,
    platform: inv.platform,
    token: inv.token,
    reason: inv.reason,
    ...(inv.invalidSince !== undefined && { invalidSince: new Date(inv.invalidSince) }),
    observedAt: new Date(inv.observedAt),
  };
}

/** A database that is down or restarting defers (no attempt spent, so an outage parks nothing); other errors retry. */
function databaseFailure(err: unknown): Outcome {
  const reason = `database error: ${String(err)}`;
  return isDatabaseUnavailable(err) ? { kind: 'defer', code: 'database-unavailable', reason, delayMs: 1_000 } : { kind: 'retry', code: 'database', reason };
}

/**
 * Handles a batch of `push.<platform>.invalidations`: bad input is parked with its reason; the
 * rest mark their devices dead in one statement (a token registered after APNs' invalidSince
 * stays valid: 'stale'). A database failure defers or retries the valid messages; nothing throws.
 */
export function createInvalidatorHandler(deps: InvalidatorDeps): (messages: readonly InboundMessage[]) => Promise<Outcome[]> {
  const count = (result: string): void => deps.metrics.invalidations.inc({ platform: deps.platform, result });
  return async (messages) => {
    const outcomes: Outcome[] = messages.map(() => ACK);
    const valid: Decoded[] = [];
    messages.forEach((message, index) => {
      const decoded = decode(message, deps.platform);
      if ('kind' in decoded) {
        outcomes[index] = decoded;
        count('parked');
        deps.logger.warn({ queue: message.queue, outcome: decoded }, 'invalidation parked');
      } else valid.push({ index, input: decoded });
    });
    if (valid.length === 0) return outcomes;
    try {
      const results = await deps.devices.invalidateMany(valid.map((v) => v.input));
      valid.forEach(({ input }, i) => {
        const result = results[i] ?? 'unknown';
        count(result);
        deps.logger.info({ app: input.app, platform: input.platform, token: input.token, reason: input.reason, result }, 'invalidation applied');
      });
    } catch (err) {
      // One message's value PostgreSQL refuses: thrown, so the consumer isolates it (messageError).
      if (refusedValueReason(err) !== undefined) throw err;
      deps.logger.error({ err }, 'invalidations could not be applied; retrying');
      for (const { index } of valid) outcomes[index] = databaseFailure(err);
    }
    return outcomes;
  };
}
