import { createLogger, type Logger } from '@herald/logging';
import { expect, vi, type MockInstance } from 'vitest';

/**
 * A silent logger for connectBroker that keeps the error lines its children write (the broker's,
 * the consumer's: connectBroker logs through children only). A child is a child of the root
 * whoever asks, so no line reaches two spies.
 */
export function errorRecordingLogger(service: string): { logger: Logger; errors: () => { fields: unknown; msg: unknown }[] } {
  const logger = createLogger({ service, level: 'silent' });
  const spies: MockInstance[] = [];
  const child = logger.child.bind(logger);
  vi.spyOn(logger, 'child').mockImplementation((...args) => {
    const made = child(...args);
    spies.push(vi.spyOn(made, 'error'));
    return made;
  });
  return { logger, errors: () => spies.flatMap((s) => s.mock.calls.map(([fields, msg]) => ({ fields, msg }))) };
}

/** One delivery a consumer's handler got. */
export interface SeenDelivery {
  at: number;
  attempt: number;
  redelivered: boolean;
  deliveryCount: unknown;
}

/** A handler whose database is away for the first `downFor` deliveries (`down`) and back after (`up`), recording each delivery. */
export function downThenUp<M extends { attempt: number; redelivered: boolean; headers: Record<string, unknown> }, R>(
  down: (ms: readonly M[]) => R,
  up: (ms: readonly M[]) => R,
  downFor: number,
): { handle: (ms: readonly M[]) => R; seen: SeenDelivery[] } {
  const seen: SeenDelivery[] = [];
  const handle = (ms: readonly M[]): R => {
    for (const m of ms) seen.push({ at: Date.now(), attempt: m.attempt, redelivered: m.redelivered, deliveryCount: m.headers['x-delivery-count'] });
    return (seen.length <= downFor ? down : up)(ms);
  };
  return { handle, seen };
}

/**
 * What a consumer with deferOn (deferWhileDatabaseUnavailable) does with one message through three
 * deliveries with the database away: each batch deferred after the consumer's back-off (0.5 s,
 * 1 s, 2 s) and at least that long, no attempt or delivery count spent, one consumer line a batch.
 */
export function expectDeferredWithBackoff(seen: readonly SeenDelivery[], consumerErrors: readonly { fields: unknown; msg: unknown }[]): void {
  expect(seen).toHaveLength(4);
  expect(seen.every((s) => s.attempt === 1 && !s.redelivered && s.deliveryCount === undefined)).toBe(true);
  // Each gap is the consumer's pause and then the deferral (at least 1 s, at least the pause).
  const gaps = seen.slice(1).map((s, i) => s.at - (seen[i]?.at ?? 0));
  expect(gaps[0]).toBeGreaterThanOrEqual(1_400);
  expect(gaps[1]).toBeGreaterThanOrEqual(1_900);
  expect(gaps[2]).toBeGreaterThanOrEqual(3_900);
  expect(consumerErrors.map((e) => e.msg)).toEqual(Array(3).fill('handler failed: a dependency is unavailable; deferring the batch after back-off'));
  expect(consumerErrors.map((e) => e.fields)).toMatchObject([
    { backoffMs: expect.closeTo(500, -2) as unknown, code: 'database-unavailable' },
    { backoffMs: expect.closeTo(1_000, -2) as unknown, code: 'database-unavailable' },
    { backoffMs: expect.closeTo(2_000, -2) as unknown, code: 'database-unavailable' },
  ]);
}
