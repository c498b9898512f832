import { describe, expect, it } from 'vitest';
import { describeRefusals, PERMANENT_PARK_CODES, permanentRejection } from './park-codes.ts';

describe('which parked messages a replay refuses without force', () => {
  it('refuses what would fail the same way again', () => {
    for (const code of [
      'malformed-json',
      'schema',
      'bad-schedule',
      'payload-too-large',
      'provider-rules',
      'provider-rejected',
      'receiver-rejected',
      'wrong-platform',
      'job-id-conflict',
      'job-id-reused',
    ]) {
      expect(permanentRejection(code), code).toBeTypeOf('string');
    }
  });

  it('replays what an operator can fix first', () => {
    for (const code of [
      'unknown-app',
      'app-disabled',
      'app-banned',
      'no-apns-topic',
      'subscription-disabled',
      'retries-exhausted',
      'delivery-limit',
      undefined,
    ]) {
      expect(permanentRejection(code), String(code)).toBeUndefined();
    }
    expect(Object.keys(PERMANENT_PARK_CODES)).not.toContain('retries-exhausted');
  });

  it('says what it left parked, why, and how to force it', () => {
    expect(describeRefusals([])).toBe('');
    const text = describeRefusals([
      { code: 'schema', count: 2, why: 'it breaks its message contract, so it would be parked again', messageIds: ['a', 'b'] },
    ]);
    expect(text).toBe(
      'refused to replay 2 permanent rejection(s), left parked: 2 parked as "schema" (it breaks its message contract, so it would be parked again; e.g. a, b). Replay with force to send them anyway.',
    );
  });
});
