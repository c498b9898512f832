import { ConfigError, loadConfig } from '@herald/config';
import { describe, expect, it } from 'vitest';
import { demuxerConfig, demuxerConfigProblems } from './config.ts';

const load = (env: Record<string, string>) => loadConfig(demuxerConfig, env, demuxerConfigProblems);

describe('the demuxer refuses a job retention the ledger outlasts', () => {
  it('takes the defaults (30 days against 168 h) and a job retention a day past the ledger', () => {
    expect(load({}).JOB_RETENTION_DAYS).toBe(30);
    expect(load({ JOB_RETENTION_DAYS: '8' }).JOB_RETENTION_DAYS).toBe(8);
    expect(load({ JOB_RETENTION_DAYS: '2', LEDGER_RETENTION_HOURS: '47' }).LEDGER_RETENTION_HOURS).toBe(47);
  });

  it('refuses a job retention no longer than the ledger, naming both', () => {
    const envs: Record<string, string>[] = [{ JOB_RETENTION_DAYS: '3' }, { JOB_RETENTION_DAYS: '7' }, { JOB_RETENTION_DAYS: '30', LEDGER_RETENTION_HOURS: '720' }];
    for (const env of envs) {
      let problems: readonly string[] = [];
      try {
        load(env);
      } catch (err) {
        if (err instanceof ConfigError) problems = err.problems;
      }
      expect(problems).toEqual([expect.stringMatching(/^JOB_RETENTION_DAYS \(\d+ days\) must be longer than LEDGER_RETENTION_HOURS \(\d+ h\)/)]);
    }
  });
});

describe("the demuxer's audience chunks at once", () => {
  it('are at most 16: a webhook-fanout prefetch (hundreds) set under the shared name is refused, not expanded as that many chunks of up to 50,000 devices', () => {
    expect(load({ FANOUT_PREFETCH: '16' }).FANOUT_PREFETCH).toBe(16);
    expect(() => load({ FANOUT_PREFETCH: '400' })).toThrow(/FANOUT_PREFETCH must be at most 16, got 400/);
  });
});
