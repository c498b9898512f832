import { describe, expect, it } from 'vitest';
import { activeConditions, type AlarmCondition } from './alarm-rules.ts';
import { AlarmTracker } from './alarm-tracker.ts';
import { queueKindOf, type QueueSnapshot } from './queue-snapshot.ts';
import { longestDelayMs, parseThresholds, thresholdConfig } from './thresholds.ts';

const queue = (over: Partial<QueueSnapshot> & { name: string }): QueueSnapshot => ({
  kind: queueKindOf(over.name),
  messages: 0,
  ready: 0,
  unacked: 0,
  consumers: 1,
  publishRate: 0,
  ackRate: 0,
  deliverRate: 0,
  headAgeSeconds: undefined,
  ...over,
});

const thresholds = thresholdConfig({
  '*': { backlog: 100, backlogForMs: 1_000, noConsumerForMs: 2_000, drainSeconds: 10, drainForMs: 0, drainMinMessages: 20, parkedWindowMs: 5_000 },
});
const kinds = (queues: QueueSnapshot[], baseline?: number) =>
  activeConditions({ queues, thresholds, parkedBaseline: () => baseline }).map((c) => `${c.alarm}:${c.queue}`);

describe('alarm rules', () => {
  it('a work queue with messages and no consumer is the dead-pusher case, not a drain problem', () => {
    expect(kinds([queue({ name: 'push.apns.send', messages: 50, consumers: 0 })])).toEqual(['no-consumer:push.apns.send']);
  });
  it('an empty queue without consumers, and parked or retry queues without consumers, are fine', () => {
    expect(kinds([queue({ name: 'push.apns.send', consumers: 0 }), queue({ name: 'push.jobs.parked', messages: 5, consumers: 0 })])).toEqual([]);
  });
  it('a delay queue no process relays back is a no-consumer alarm; a TTL retry queue of an earlier release never has a consumer and is not', () => {
    const [cond] = activeConditions({ queues: [queue({ name: 'herald.delay.5000ms', messages: 12, consumers: 0 })], thresholds, parkedBaseline: () => undefined });
    expect(cond).toMatchObject({ alarm: 'no-consumer', queue: 'herald.delay.5000ms', value: 12 });
    expect(cond?.summary).toBe('herald.delay.5000ms has 12 messages waiting and no process relaying them back');
    expect(kinds([queue({ name: 'herald.retry.5000ms', messages: 12, consumers: 0 })])).toEqual([]);
    // Relayed messages wait on purpose: neither a drain problem nor (below the backlog) an alarm.
    expect(kinds([queue({ name: 'herald.delay.5000ms', messages: 50, consumers: 2 })])).toEqual([]);
  });
  it('backlog above the threshold, and drain time at the current ack rate above the bound', () => {
    expect(kinds([queue({ name: 'push.fcm.send', messages: 200, ackRate: 5 })])).toEqual(['backlog:push.fcm.send', 'drain-time:push.fcm.send']);
    expect(kinds([queue({ name: 'push.fcm.send', messages: 90, ackRate: 50 })])).toEqual([]);
  });
  it('with packed send messages, the backlog alarm counts up to that many pushes a message, on the queues that carry them', () => {
    const perMessage = (q: string): number => (q === 'push.fcm.send' ? 10 : 1);
    const backlogs = (queues: QueueSnapshot[]) =>
      activeConditions({ queues, thresholds, parkedBaseline: () => undefined, pushesPerMessage: perMessage }).filter((c) => c.alarm === 'backlog');
    // 20 messages of up to 10 pushes: up to 200 pushes, above the threshold of 100.
    const [packed] = backlogs([queue({ name: 'push.fcm.send', messages: 20, ackRate: 100 })]);
    expect(packed).toMatchObject({ queue: 'push.fcm.send', value: 200, threshold: 100 });
    expect(packed?.summary).toBe('push.fcm.send holds 20 messages, up to 200 pushes at 10 a message (threshold 100)');
    expect(backlogs([queue({ name: 'push.fcm.send', messages: 10, ackRate: 100 })])).toEqual([]);
    // A queue whose messages are one each compares messages, as before.
    expect(backlogs([queue({ name: 'push.jobs', messages: 20, ackRate: 100 })])).toEqual([]);
  });
  it('nothing acked with consumers attached is an infinite drain time above the minimum depth, and a stall at any depth', () => {
    expect(kinds([queue({ name: 'push.fcm.send', messages: 30 })])).toEqual(['drain-time:push.fcm.send', 'stalled:push.fcm.send']);
    // A handful of messages nobody acks: the consumers are stuck (their database gone), users wait.
    const [stall] = activeConditions({ queues: [queue({ name: 'push.fcm.send', messages: 3, consumers: 2 })], thresholds, parkedBaseline: () => undefined });
    expect(stall).toMatchObject({ alarm: 'stalled', forMs: 120_000, value: 3, summary: 'push.fcm.send has 3 messages and 2 consumers, and nothing is being acked' });
    // Acks flowing, no consumer (the no-consumer alarm's case), or nothing waiting: no stall.
    expect(kinds([queue({ name: 'push.fcm.send', messages: 3, ackRate: 0.2 })])).toEqual([]);
    expect(kinds([queue({ name: 'push.fcm.send', messages: 3, consumers: 0 })])).toEqual(['no-consumer:push.fcm.send']);
    expect(kinds([queue({ name: 'push.fcm.send', messages: 0 })])).toEqual([]);
  });
  it('a work queue the topology declares that the broker lacks is missing; one it has is not', () => {
    const queues = [queue({ name: 'push.jobs' })];
    const conditions = activeConditions({ queues, thresholds, parkedBaseline: () => undefined, expected: ['push.jobs', 'push.apns.send'] });
    expect(conditions).toEqual([expect.objectContaining({ alarm: 'queue-missing', queue: 'push.apns.send', forMs: 2_000, summary: expect.stringMatching(/^push.apns.send does not exist on the broker/) })]);
    expect(activeConditions({ queues, thresholds, parkedBaseline: () => undefined }).map((c) => c.alarm)).toEqual([]);
  });
  it('a parked queue holding more than the backlog threshold is no backlog: nothing consumes it, so the alarm would never clear', () => {
    expect(kinds([queue({ name: 'push.jobs.parked', messages: 50_000, consumers: 0 })], 50_000)).toEqual([]);
    // A delay queue deeper than the threshold is (a retry storm shows there first).
    expect(kinds([queue({ name: 'herald.delay.5000ms', messages: 500, consumers: 2, ackRate: 100 })])).toEqual(['backlog:herald.delay.5000ms']);
  });

  it('a parked queue deeper than its smallest depth in the window is growing', () => {
    expect(kinds([queue({ name: 'push.jobs.parked', messages: 3, consumers: 0 })], 1)).toEqual(['parked-growing:push.jobs.parked']);
    expect(kinds([queue({ name: 'push.jobs.parked', messages: 3, consumers: 0 })], 3)).toEqual([]);
    expect(kinds([queue({ name: 'push.jobs.parked', messages: 3, consumers: 0 })], undefined)).toEqual([]);
  });
});

// A registrar acking 0.5/s while 1/s arrived took 33 minutes to alarm (drain-time needs 1,000
// messages, backlog 10,000, stalled nothing acked), new devices getting no pushes meanwhile.
describe('the oldest-message alarm', () => {
  const defaults = thresholdConfig();
  const ageOf = (seconds: number, lowerBound = false) => () => ({ seconds, lowerBound });
  const conditions = (q: QueueSnapshot, age: ReturnType<ReturnType<typeof ageOf>> | undefined) =>
    activeConditions({ queues: [q], thresholds: defaults, parkedBaseline: () => undefined, oldestAge: () => age });
  // Five minutes in: 150 messages, all held by the registrar's prefetch (200), acked at 0.5/s.
  const registrations = queue({ name: 'push.registrations', messages: 150, ready: 0, unacked: 150, consumers: 1, ackRate: 0.5 });

  it('fires on a work queue whose oldest message waited past oldestAgeSeconds (300 s), after oldestAgeForMs, however few its messages and acks', () => {
    const [c, ...others] = conditions(registrations, ageOf(301)());
    expect(others).toEqual([]);
    expect(c).toEqual({
      alarm: 'oldest-message',
      queue: 'push.registrations',
      forMs: 60_000,
      value: 301,
      threshold: 300,
      summary: "push.registrations's oldest message has waited 301 s (bound 300 s): 150 messages, 1 consumers, 0.5 acks/s",
    });
    expect(conditions(registrations, ageOf(300)())).toEqual([]);
    // A monitor that restarted counts from its first poll: at least that.
    expect(conditions(registrations, ageOf(400, true)())[0]?.summary).toMatch(/has waited at least 400 s/);
    // The alarm fires once its condition has held for its delay.
    const tracker = new AlarmTracker();
    expect(tracker.update(0, conditions(registrations, ageOf(301)()))).toEqual([]);
    expect(tracker.update(60_000, conditions(registrations, ageOf(361)()))).toEqual([expect.objectContaining({ state: 'firing', alarm: expect.objectContaining({ alarm: 'oldest-message', value: 361 }) })]);
  });

  it('is configured per queue like the other thresholds', () => {
    const own = parseThresholds('{"*":{"oldestAgeSeconds":600},"push.registrations":{"oldestAgeSeconds":60,"oldestAgeForMs":0}}');
    const at = (name: string, seconds: number) =>
      activeConditions({ queues: [queue({ ...registrations, name })], thresholds: own, parkedBaseline: () => undefined, oldestAge: ageOf(seconds) }).map((c) => `${c.alarm}:${c.forMs}`);
    expect(at('push.registrations', 61)).toEqual(['oldest-message:0']);
    expect(at('push.jobs', 301)).toEqual([]);
    expect(at('push.jobs', 601)).toEqual(['oldest-message:60000']);
  });

  it('not on queues that hold messages by design (delay, retry, parked), nor on one without consumers (the no-consumer alarm)', () => {
    const old = ageOf(3_600)();
    for (const name of ['herald.delay.300000ms', 'herald.retry.5000ms', 'push.registrations.parked']) {
      expect(conditions(queue({ name, messages: 40, consumers: name.startsWith('herald.delay.') ? 1 : 0, ackRate: 0.1 }), old).map((c) => c.alarm), name).not.toContain('oldest-message');
    }
    expect(conditions({ ...registrations, consumers: 0 }, old).map((c) => c.alarm)).toEqual(['no-consumer']);
    expect(conditions({ ...registrations, messages: 0, unacked: 0 }, old)).toEqual([]);
  });

  it("without the monitor's estimate (herald status --local), the broker's head timestamp where a classic queue reports it", () => {
    const local = (headAgeSeconds: number | undefined) => activeConditions({ queues: [{ ...registrations, headAgeSeconds }], thresholds: defaults, parkedBaseline: () => undefined }).map((c) => c.alarm);
    expect(local(500)).toEqual(['oldest-message']);
    expect(local(undefined)).toEqual([]);
  });
});

describe('alarm tracker', () => {
  const cond: AlarmCondition = { alarm: 'no-consumer', queue: 'q', forMs: 2_000, value: 5, threshold: 0, summary: 's' };

  it('fires once the condition has held for forMs, once, and resolves when it ends', () => {
    const t = new AlarmTracker();
    expect(t.update(0, [cond])).toEqual([]);
    expect(t.update(1_999, [cond])).toEqual([]);
    const fired = t.update(2_000, [cond]);
    expect(fired).toEqual([{ state: 'firing', at: 2_000, alarm: expect.objectContaining({ alarm: 'no-consumer', queue: 'q', since: 0, firedAt: 2_000 }) }]);
    expect(t.update(3_000, [{ ...cond, value: 9 }])).toEqual([]);
    expect(t.active()).toEqual([expect.objectContaining({ value: 9 })]);
    expect(t.update(4_000, [])).toEqual([{ state: 'resolved', at: 4_000, alarm: expect.objectContaining({ queue: 'q', value: 9 }) }]);
    expect(t.active()).toEqual([]);
  });

  it('a condition that ends before forMs never fires, and starts its clock afresh next time', () => {
    const t = new AlarmTracker();
    t.update(0, [cond]);
    expect(t.update(1_500, [])).toEqual([]);
    t.update(1_600, [cond]);
    expect(t.update(3_000, [cond])).toEqual([]);
    expect(t.update(3_600, [cond])).toHaveLength(1);
  });

  it("a condition whose source says since when it holds (a provider lane down since) counts its delay from then", () => {
    const lane: AlarmCondition = { ...cond, alarm: 'provider-down', queue: 'lane.apns/apns (shared connection)', forMs: 60_000 };
    const t = new AlarmTracker();
    expect(t.update(100_000, [{ ...lane, since: 50_000 }])).toEqual([]);
    expect(t.pending()).toEqual([expect.objectContaining({ since: 50_000, firesAt: 110_000 })]);
    expect(t.update(110_000, [{ ...lane, since: 50_000 }])).toEqual([expect.objectContaining({ state: 'firing', alarm: expect.objectContaining({ since: 50_000, firedAt: 110_000 }) })]);
    // A since ahead of this clock counts from now.
    const ahead = new AlarmTracker();
    ahead.update(0, [{ ...lane, since: 5_000 }]);
    expect(ahead.pending()).toEqual([expect.objectContaining({ since: 0, firesAt: 60_000 })]);
  });

  it('lists a condition waiting out its delay as pending, with when it fires', () => {
    const t = new AlarmTracker();
    t.update(500, [cond]);
    expect(t.pending()).toEqual([{ alarm: 'no-consumer', queue: 'q', summary: 's', since: 500, firesAt: 2_500 }]);
    t.update(2_500, [cond]);
    expect(t.pending()).toEqual([]);
  });
});

// A restarted monitor showed nothing for an alarm firing for hours, then "firing for 1m".
describe('alarm tracker after a restart, over the alarms said firing before it', () => {
  const hoursAgo = { alarm: 'no-consumer', queue: 'q', since: -10_800_000, firedAt: -10_770_000 };
  const cond: AlarmCondition = { alarm: 'no-consumer', queue: 'q', forMs: 30_000, value: 42, threshold: 0, summary: 'q has 42 messages waiting and no consumer' };

  it('an alarm whose condition still holds at the first update fires at once, with its first since and firedAt', () => {
    const t = new AlarmTracker([hoursAgo]);
    const firing = { alarm: 'no-consumer', queue: 'q', summary: cond.summary, value: 42, threshold: 0, since: -10_800_000, firedAt: -10_770_000 };
    expect(t.update(0, [cond])).toEqual([{ state: 'firing', at: 0, alarm: firing }]);
    expect(t.active()).toEqual([firing]);
    expect(t.update(1_000, [cond])).toEqual([]);
  });

  it('one seen ended is forgotten: its condition back later waits out its delay afresh', () => {
    const t = new AlarmTracker([hoursAgo]);
    expect(t.update(0, [])).toEqual([]);
    expect(t.update(1_000, [cond])).toEqual([]);
    expect(t.pending()).toEqual([expect.objectContaining({ since: 1_000, firesAt: 31_000 })]);
  });

  it('one not seen (a failed poll read nothing) is kept until its condition is read', () => {
    const t = new AlarmTracker([hoursAgo]);
    expect(t.update(0, [], () => false)).toEqual([]);
    expect(t.update(1_000, [cond])).toEqual([expect.objectContaining({ state: 'firing', alarm: expect.objectContaining({ firedAt: -10_770_000 }) })]);
  });
});

describe('thresholds', () => {
  it('defaults, then "*", then the queue (a parked queue falls back to its work queue)', () => {
    const t = parseThresholds('{"*":{"backlog":50},"push.apns.send":{"backlog":7,"noConsumerForMs":1000}}');
    expect(t.for('push.fcm.send')).toMatchObject({ backlog: 50, noConsumerForMs: 30_000 });
    expect(t.for('push.apns.send')).toMatchObject({ backlog: 7, noConsumerForMs: 1_000, drainSeconds: 600 });
    expect(t.for('push.apns.send.parked').backlog).toBe(7);
  });
  it('the longest delay of any alarm, over the defaults, "*" and each queue', () => {
    // oldest-message's age bound and delay (6 min) are the longest by default: a restarted monitor
    // counts a quorum queue's oldest message from its first poll, and tells it only after that.
    expect(longestDelayMs(thresholdConfig())).toBe(360_000);
    const short = '"stalledForMs":1000,"parkedWindowMs":60000,"oldestAgeSeconds":30,"oldestAgeForMs":10000';
    expect(longestDelayMs(parseThresholds(`{"*":{${short}},"push.jobs":{"backlogForMs":90000}}`))).toBe(90_000);
    expect(longestDelayMs(parseThresholds(`{"*":{${short}},"push.jobs":{"oldestAgeSeconds":120}}`))).toBe(130_000);
  });
  it('names every bad field', () => {
    expect(() => parseThresholds('{"push.jobs":{"backlog":-1,"bogus":1}}')).toThrow(/push\.jobs\.backlog.*|bogus/);
    expect(() => parseThresholds('not json')).toThrow(/must be JSON/);
  });
});
