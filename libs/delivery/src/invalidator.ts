import { decodeWith, Invalidation, type Platform } from '@herald/contracts';
import { deferWhileDatabaseUnavailable, isDatabaseUnavailable, refusedValueReason, type InvalidationInput, type InvalidationResult } from '@herald/db';
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

/**
 * What an invalidator's consumer does with what its handler throws (spread into ConsumeOptions): a
 * value PostgreSQL refuses is one message's, retried and parked alone with the database's words
 * (messageError); a database that is down or restarting defers the whole batch after the
 * consumer's back-off, 0.5 s doubling to 30 s while it stays away, spending no attempt, so an
 * outage of any length parks nothing (deferOn), with one log line a failed batch (the consumer's).
 */
export const invalidatorErrors = { messageError: refusedValueReason, deferOn: deferWhileDatabaseUnavailable } as const;

/**
 * Handles a batch of `push.<platform>.invalidations`: bad input is parked with its reason; the
 * rest mark their devices dead in one statement (a token registered after APNs' invalidSince
 * stays valid: 'stale'). A database that is unavailable, or a value it refuses, is thrown for the
 * consumer (invalidatorErrors); another database error retries the valid messages.
 */
export function createInvalidatorHandler(deps: InvalidatorDeps): (messages: readonly InboundMessage[]) => Promise<Outcome[]> {
  const count = (result: string): void => deps.metrics.invalidations.inc({ platform: deps.platform, result });
  return async (messages) => {
    const outcomes: Outcome[] = messages.map(() => ACK);
    const valid: Decoded[] = [];
    const parked: { queue: string; outcome: Park }[] = [];
    messages.forEach((message, index) => {
      const decoded = decode(message, deps.platform);
      if ('kind' in decoded) {
        outcomes[index] = decoded;
        parked.push({ queue: message.queue, outcome: decoded });
      } else valid.push({ index, input: decoded });
    });
    if (valid.length > 0) await invalidate(valid, deps, outcomes, count);
    // Counted and told once the outcomes are returned: a batch thrown (deferred) comes again.
    for (const p of parked) {
      count('parked');
      deps.logger.warn(p, 'invalidation parked');
    }
    return outcomes;
  };
}

/** Marks the valid messages' devices dead; a database error the consumer does not handle retries them. */
async function invalidate(valid: readonly Decoded[], deps: InvalidatorDeps, outcomes: Outcome[], count: (result: string) => void): Promise<void> {
  try {
    const results = await deps.devices.invalidateMany(valid.map((v) => v.input));
    valid.forEach(({ input }, i) => {
      const result = results[i] ?? 'unknown';
      count(result);
      deps.logger.info({ app: input.app, platform: input.platform, token: input.token, reason: input.reason, result }, 'invalidation applied');
    });
  } catch (err) {
    // One message's value PostgreSQL refuses, or a database away: the consumer's (invalidatorErrors).
    if (refusedValueReason(err) !== undefined || isDatabaseUnavailable(err)) throw err;
    deps.logger.error({ err }, 'invalidations could not be applied; retrying');
    const retry: Outcome = { kind: 'retry', code: 'database', reason: `database error: ${String(err)}` };
    for (const { index } of valid) outcomes[index] = retry;
  }
}
