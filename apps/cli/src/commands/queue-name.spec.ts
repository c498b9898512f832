import { describe, expect, it } from 'vitest';
import { knownWorkQueue } from './queue-name.ts';

describe('parked queue names', () => {
  it("accepts Herald's work queues and their parked queues", () => {
    expect(knownWorkQueue('push.apns.send')).toBe('push.apns.send');
    expect(knownWorkQueue('push.jobs.parked')).toBe('push.jobs.parked');
  });

  it('accepts the delay queues and their parked queues, which the parked alarm counts too', () => {
    expect(knownWorkQueue('herald.delay.1000ms.parked')).toBe('herald.delay.1000ms.parked');
    expect(knownWorkQueue('herald.delay.600000ms')).toBe('herald.delay.600000ms');
    expect(() => knownWorkQueue('herald.delay.soonms.parked')).toThrow(/no queue "herald.delay.soonms.parked"/);
  });

  it('refuses anything else with one line naming the queue and listing the real ones', () => {
    expect(() => knownWorkQueue('bogus')).toThrow(/^no queue "bogus": parked messages live under Herald's work queues, push\.jobs, push\.fanout, push\.apns\.send/);
    expect(() => knownWorkQueue('bogus.parked')).toThrow(/no queue "bogus.parked"/);
    expect(() => knownWorkQueue('push.apns')).toThrow(/no queue "push.apns"/);
  });
});
