import { loadConfig } from '@herald/config';
import { describe, expect, it } from 'vitest';
import { fanoutConfig } from './config.ts';

describe('the webhook-fanout settings', () => {
  it("are read under names of its own first, so one ConfigMap shared with the demuxer (whose FANOUT_PREFETCH counts audience chunks) tunes each apart", () => {
    const shared = { FANOUT_PREFETCH: '4', WEBHOOK_FANOUT_PREFETCH: '400', WEBHOOK_FANOUT_BATCH_SIZE: '50', WEBHOOK_FANOUT_BATCH_WAIT_MS: '20' };
    const fanout = loadConfig(fanoutConfig, shared);
    expect([fanout.FANOUT_PREFETCH, fanout.FANOUT_BATCH_SIZE, fanout.FANOUT_BATCH_WAIT_MS]).toEqual([400, 50, 20]);
    // The older name alone still sets it.
    expect(loadConfig(fanoutConfig, { FANOUT_PREFETCH: '300' }).FANOUT_PREFETCH).toBe(300);
  });
});
