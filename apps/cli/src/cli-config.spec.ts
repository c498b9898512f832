import { ConfigError, loadConfig } from '@herald/config';
import { describe, expect, it } from 'vitest';
import { cliConfig } from './cli-config.ts';

describe('the CLI settings', () => {
  it('refuse a MONITOR_URL with a user and password (fetch refused it, and status printed it whole), without showing them', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig(cliConfig, { MONITOR_URL: 'http://ops:S3cret@monitor.internal:9470' });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).toEqual(['MONITOR_URL must not carry a user or password: the monitor is asked with HERALD_OPERATOR_KEY']);
    expect(loadConfig(cliConfig, { MONITOR_URL: 'http://monitor.internal:9470' }).MONITOR_URL).toBe('http://monitor.internal:9470');
  });
});
