import type { Logger } from '@herald/logging';

export interface ClaimRenewer {
  renew(pushIds: readonly string[], owner: string): Promise<number>;
}

/** Stops renewing; call it once the batch's outcomes are recorded (or its claims released). */
export type StopKeeping = () => void;

/**
 * Keeps a batch's ledger claims alive while its owner works on them. A claim protects a push for
 * one lease, after which a redelivered copy in another pusher may take it over and send it again.
 * A batch that lives past a lease — budget waited for, a slow answer, then a slow write of the
 * outcome (a database under load or failing over, a broker node lost with copies of the batch
 * circulating) — would otherwise see pushes the provider already accepted sent a second time by
 * whoever polls next. So while the batch is at work its claims are renewed every third of a
 * lease: only a process that stopped (killed, frozen) lets its claims run out, which is the one
 * duplicate window the ledger documents. Renewals cost a statement per batch that lives longer
 * than a third of a lease, none for the others.
 */
export function keepClaims(ledger: ClaimRenewer, pushIds: readonly string[], owner: string, leaseMs: number, logger: Logger): StopKeeping {
  if (pushIds.length === 0) return () => undefined;
  let stopped = false;
  let renewing = false;
  const renewOnce = async (): Promise<void> => {
    if (renewing || stopped) return;
    renewing = true;
    try {
      // Claims recorded done or released meanwhile are simply not renewed.
      await ledger.renew(pushIds, owner);
    } catch (err) {
      logger.warn({ err, claims: pushIds.length }, 'could not renew the ledger claims of a batch at work; trying again');
    } finally {
      renewing = false;
    }
  };
  const timer = setInterval(() => void renewOnce(), Math.max(10, Math.floor(leaseMs / 3)));
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
