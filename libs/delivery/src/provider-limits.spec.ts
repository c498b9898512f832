import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { capRequestTimeout, providerLimits } from './run-pusher.ts';

const logger = createLogger({ service: 'provider-limits-test', level: 'silent' });

describe('provider request timeouts fit inside the ledger lease', () => {
  it('leaves a timeout alone when the send ends well inside the lease (defaults: 30 s lease, 5/10 s timeouts)', () => {
    const limits = providerLimits(30_000);
    expect(limits.maxRequestTimeoutMs).toBe(12_000);
    expect(capRequestTimeout({ requestTimeoutMs: 10_000, projectId: 'p' }, limits, logger)).toEqual({ requestTimeoutMs: 10_000, projectId: 'p' });
  });

  it('caps a timeout that could outlive a short lease, so a live send is never taken over', () => {
    const limits = providerLimits(3_000);
    // Half a lease of rate-limit waiting + the request + recording the outcome stay under 3 s.
    expect(3_000 / 2 + limits.maxRequestTimeoutMs).toBeLessThan(3_000);
    expect(capRequestTimeout({ requestTimeoutMs: 10_000 }, limits, logger).requestTimeoutMs).toBe(1_200);
  });
});
