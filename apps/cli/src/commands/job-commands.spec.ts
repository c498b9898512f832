import { describe, expect, it } from 'vitest';
import type { JobPushList } from '@herald/contracts';
import { describeJobPushes } from './job-commands.ts';

// A push's reason can carry what a provider or a webhook receiver answered.
describe('herald job pushes', () => {
  it('shows a reason with control characters as escapes, so it cannot rewrite the lines around it', () => {
    const list: JobPushList = {
      pushes: [
        { pushId: 'p-1', platform: 'web', deviceId: '7', token: '…abcdef', outcome: 'failed', code: 'provider-rejected', reason: 'HTTP 400: \u001b[2J\u001b]52;c;ZXZpbA==\u0007', providerMessageId: null, dueAt: null, updatedAt: '2026-12-07T04:00:00.000Z' },
      ],
      next: null,
    };
    const out = describeJobPushes('job-1', list, { limit: 100 });
    // eslint-disable-next-line no-control-regex
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out).toContain('HTTP 400: \\u001b[2J\\u001b]52;c;ZXZpbA==\\u0007');
  });
});
