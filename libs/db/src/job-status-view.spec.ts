import { describe, expect, it } from 'vitest';
import { JobStatus } from '@herald/contracts';
import type { JobStatusRecord } from './job-repository.ts';
import type { PushRecord } from './push-outcomes.ts';
import { toJobPushList, toJobStatus } from './job-status-view.ts';

const record = (
  over: Partial<JobStatusRecord['job']>,
  outcomes: Record<string, number>,
  parkedBy: Record<string, number> = {},
  scheduled = 0,
): JobStatusRecord => ({
  job: {
    id: 'j',
    app: 'demo',
    acceptedAt: new Date('2030-01-01T00:00:00Z'),
    publishedAt: new Date('2030-01-01T00:00:00Z'),
    targeted: 13,
    demuxOutcome: 'fanned-out',
    notices: [],
    noDevice: 1,
    demuxReason: null,
    ...over,
  },
  outcomes,
  parkedBy,
  scheduled,
});

describe('toJobStatus', () => {
  it('adds up: targeted = delivered + invalid + failed + parked + skipped + inFlight', () => {
    const s = toJobStatus(
      record(
        {},
        { delivered: 3, invalid: 1, failed: 1, parked: 2, 'opted-out': 1, muted: 1, expired: 1, cancelled: 1 },
        { 'retries-exhausted': 1, 'delivery-limit': 1 },
        1,
      ),
    );
    expect(JobStatus.parse(s)).toEqual(s);
    expect(s).toMatchObject({
      targeted: 13,
      delivered: 3,
      invalid: 1,
      failed: 1,
      parked: 2,
      parkedBy: { 'retries-exhausted': 1, 'delivery-limit': 1 },
      expired: 1,
      skipped: { optedOut: 1, muted: 1, noDevice: 1, expired: 1, cancelled: 1 },
      scheduled: 1,
      inFlight: 1,
      jobParked: null,
    });
    const skipped = Object.values(s.skipped).reduce((a, b) => a + b, 0);
    expect(s.delivered + s.invalid + s.failed + s.parked + skipped + (s.inFlight ?? 0)).toBe(s.targeted);
  });

  it('says when the demuxer parked the job itself, and why', () => {
    const s = toJobStatus(
      record({ targeted: 0, noDevice: null, demuxOutcome: 'parked: app-disabled', demuxReason: 'app "demo" is disabled' }, {}),
    );
    expect(s).toMatchObject({
      targeted: 0,
      inFlight: 0,
      parked: 0,
      jobParked: { code: 'app-disabled', reason: 'app "demo" is disabled' },
    });
  });

  it('has no in-flight count before the demuxer has seen the job', () => {
    expect(toJobStatus(record({ targeted: null, demuxOutcome: null, noDevice: null }, {}))).toMatchObject({
      targeted: null,
      inFlight: null,
      demuxOutcome: null,
    });
  });
});

describe('job pushes', () => {
  const row = (pushId: string, over: Partial<PushRecord> = {}): PushRecord => ({
    pushId,
    outcome: 'delivered',
    code: null,
    reason: null,
    providerMessageId: 'm',
    platform: 'apns',
    deviceId: '7',
    token: 'abcdef0123456789abcdef',
    dueAt: null,
    updatedAt: new Date('2030-01-01T00:00:00Z'),
    ...over,
  });

  it('offers the next page only when this one is full', () => {
    expect(toJobPushList([row('a'), row('b')], 2)).toMatchObject({
      next: 'b',
      pushes: [{ pushId: 'a', token: '…abcdef' }, { pushId: 'b' }],
    });
    expect(toJobPushList([row('a')], 2).next).toBeNull();
    expect(toJobPushList([], 2)).toEqual({ pushes: [], next: null });
  });
});
