import { describe, expect, it } from 'vitest';
import { decodeWith, parseWith } from './parse.ts';
import { JOB_DIGEST_VERSION, PushJob, jobContentHash } from './push-job.ts';

const input = { id: 'order-1234-shipped', app: 'shop', category: 'orders', content: { title: 'Shipped', body: 'Your order is on its way' }, userId: 'u-42' };
const parsed = (value: unknown): PushJob => {
  const r = parseWith(PushJob, value);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};

describe('a job’s digest (the HTTP API and the demuxer tell two jobs under one id apart by it)', () => {
  it('is SHA-256 of the job as validated (version 0); pinned: a change to what it reads must raise JOB_DIGEST_VERSION, or every job in flight across the upgrade is parked job-id-reused', () => {
    const digest = jobContentHash(parsed(input));
    expect(JOB_DIGEST_VERSION).toBe(0);
    expect(digest.toString('hex')).toBe('ebf7fd8dfec3660fe9800fe63d6310fbbc56bbbf0f991a19fde90fddb2bf1be5');
  });

  it('is the same for the job the API validated and stamped and for that job as the demuxer decodes it from the queue; acceptedAt and trace aside, and in any key order', () => {
    const stamped = parsed({ ...input, acceptedAt: '2026-12-06T10:00:00.000Z' });
    const decoded = decodeWith(PushJob, Buffer.from(JSON.stringify(stamped)));
    if (!decoded.ok) throw new Error(decoded.reason);
    expect(jobContentHash(decoded.value)).toEqual(jobContentHash(stamped));
    const reordered = parsed({ trace: true, userId: 'u-42', content: { body: 'Your order is on its way', title: 'Shipped' }, category: 'orders', app: 'shop', id: 'order-1234-shipped' });
    expect(jobContentHash(reordered)).toEqual(jobContentHash(stamped));
    expect(jobContentHash(parsed({ ...input, content: { title: 'Shipped!' } }))).not.toEqual(jobContentHash(stamped));
  });

  it('of a later version is 33 bytes, the version first (the doors take digests of two versions as unknown)', () => {
    const job = parsed(input);
    const later = jobContentHash(job, 1);
    expect(later.length).toBe(33);
    expect(later[0]).toBe(1);
    expect(later.subarray(1)).toEqual(jobContentHash(job, 0));
  });
});

describe('decoding a message body', () => {
  it('refuses bytes that are not UTF-8 as malformed JSON: a Latin-1 "é" would be U+FFFD, and "cafè" and "café" one user', () => {
    const latin1 = (userId: string) => Buffer.from(JSON.stringify({ ...input, userId }), 'latin1');
    expect(decodeWith(PushJob, latin1('caf\u00e9'))).toEqual({ ok: false, reason: 'malformed JSON: the body is not valid UTF-8' });
    expect(decodeWith(PushJob, latin1('caf\u00e8'))).toEqual({ ok: false, reason: 'malformed JSON: the body is not valid UTF-8' });
    const utf8 = decodeWith(PushJob, Buffer.from(JSON.stringify({ ...input, userId: 'caf\u00e9' }), 'utf8'));
    expect(utf8.ok && utf8.value.userId).toBe('caf\u00e9');
  });
});
