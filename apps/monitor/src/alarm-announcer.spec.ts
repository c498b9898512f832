import { describe, expect, it } from 'vitest';
import { seenSince, type Evidence } from './alarm-announcer.ts';

const took = 100_000;
const evidence = (e: Partial<Evidence>): Evidence => ({ polledAt: 0, pollingSince: 0, readAt: 0, parkedWindowMs: () => 300_000, oldestAgeWindowMs: () => 360_000, ...e });

describe('what tells a lease holder that an alarm it took over has ended', () => {
  it('a queue alarm: a poll of the queues after it took the lease', () => {
    expect(seenSince({ alarm: 'backlog', queue: 'q' }, took, evidence({ polledAt: took - 1 }), took + 10)).toBe(false);
    expect(seenSince({ alarm: 'backlog', queue: 'q' }, took, evidence({ polledAt: took + 5 }), took + 10)).toBe(true);
    expect(seenSince({ alarm: 'rabbitmq-unreachable', queue: '*' }, took, evidence({ polledAt: took + 5, readAt: 0 }), took + 10)).toBe(true);
  });

  it('the kinds read from PostgreSQL: a good read after it took the lease, and a poll since that evaluated it', () => {
    for (const alarm of ['scheduled-overdue', 'database-unreachable', 'apns-certificate-expiring', 'apns-certificate-expired', 'provider-down']) {
      expect(seenSince({ alarm, queue: 'scheduled.apns' }, took, evidence({ polledAt: took + 5, readAt: took - 1 }), took + 10), alarm).toBe(false);
      // Read, but the poll whose conditions the tracker holds ran before the read ended.
      expect(seenSince({ alarm, queue: 'scheduled.apns' }, took, evidence({ polledAt: took + 5, readAt: took + 6 }), took + 10), alarm).toBe(false);
      expect(seenSince({ alarm, queue: 'scheduled.apns' }, took, evidence({ polledAt: took + 7, readAt: took + 6 }), took + 10), alarm).toBe(true);
    }
  });

  it("parked-growing: a whole growth window of this instance's own polls (a restarted monitor has no history)", () => {
    const parked = { alarm: 'parked-growing', queue: 'push.apns.send.parked' };
    expect(seenSince(parked, took, evidence({ polledAt: took + 5, pollingSince: took - 10_000 }), took + 10)).toBe(false);
    expect(seenSince(parked, took, evidence({ polledAt: took + 300_000, pollingSince: took - 10_000 }), took + 300_000)).toBe(true);
    expect(seenSince(parked, took, evidence({ polledAt: took + 5, pollingSince: 0 }), took + 10_000_000)).toBe(false);
  });

  it("oldest-message: its age bound and delay of this instance's own polls (a restarted monitor counts a queue's oldest message from its first poll)", () => {
    const oldest = { alarm: 'oldest-message', queue: 'push.registrations' };
    expect(seenSince(oldest, took, evidence({ polledAt: took + 5, pollingSince: took - 10_000 }), took + 10)).toBe(false);
    expect(seenSince(oldest, took, evidence({ polledAt: took + 350_000, pollingSince: took - 10_000 }), took + 350_000)).toBe(true);
  });
});
