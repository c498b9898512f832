import { Headers } from '@herald/contracts';
import type { InboundMessage } from './types.ts';

/** Every header the messaging lib reads or writes: the contracts' names plus the parked code, a replay's mark and a webhook delivery's owner. */
export const HeraldHeaders = {
  ...Headers,
  parkedCode: 'x-herald-parked-code',
  /** On a parked message an operator replayed: when (parked.ts). */
  replayedAt: 'x-herald-replayed-at',
  /**
   * On a webhook delivery (set by the fan-out) and its retried, deferred and parked copies: the
   * team that owns its subscription, and the subscription's id, so that `herald parked` can pick
   * one team's or one subscription's parks (parked.ts): the body names neither team nor app.
   */
  team: 'x-herald-team',
  subscription: 'x-herald-subscription',
} as const;

/** The headers naming a webhook delivery's owner: its subscription's team and id (HeraldHeaders.team, .subscription). */
export const webhookOwnerHeaders = (sub: { team: string; id: string }): { [k: string]: string } => ({ [HeraldHeaders.team]: sub.team, [HeraldHeaders.subscription]: sub.id });

/** The attempt number a message carries; 1 when the header is absent or malformed. */
export function attemptOf(headers: Record<string, unknown>): number {
  const raw = headers[HeraldHeaders.attempt];
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/**
 * Whether a handler may have seen this message before, and done part of its work: the broker
 * redelivered it (a lost ack, a consumer that died), or it came back from a retry or a deferral
 * (its delay queue copy keeps the retry reason), or an operator replayed it from the parked queue,
 * or the consumer gives it again after its batch failed on one message's error. A first delivery
 * handled once reads false.
 */
export function handledBefore(message: Pick<InboundMessage, 'redelivered' | 'headers' | 'rehandled'>): boolean {
  return (
    message.redelivered ||
    message.rehandled === true ||
    message.headers[HeraldHeaders.retryReason] !== undefined ||
    message.headers[HeraldHeaders.replayedAt] !== undefined
  );
}
