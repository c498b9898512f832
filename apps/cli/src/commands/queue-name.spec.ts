import { describe, expect, it } from 'vitest';
import { knownWorkQueue } from './queue-name.ts';

describe('parked queue names', () => {
  it("accepts Herald's work queues and their parked queues", () => {
    expect(knownWorkQueue('push.apns.send')).toBe('push.apns.send');
    expect(knownWorkQueue('push.jobs.parked')).toBe('push.jobs.parked');
  });

  it('refuses anything else with one line naming the queue and listing the real ones', () => {
    expect(() => knownWorkQueue('bogus')).toThrow(/^no queue "bogus": parked messages live under Herald's work queues, push\.jobs, push\.fanout, push\.apns\.send/);
    expect(() => knownWorkQueue('bogus.parked')).toThrow(/no queue "bogus.parked"/);
    expect(() => knownWorkQueue('push.apns')).toThrow(/no queue "push.apns"/);
  });
});
