import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, MAX_TIMER_MS } from './load-config.ts';
import { int, intList, optionalBearerKey } from './vars.ts';

const problemsOf = (run: () => unknown): readonly string[] => {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('loadConfig', () => {
  const spec = {
    PRUNE_INTERVAL_MS: int('How often', { default: '1000', min: 1000 }),
    RETRY_DELAYS_MS: intList('Retry schedule', { default: '1000,5000' }),
    RETENTION_DAYS: int('Kept this long', { default: '7', min: 1 }),
  };

  it('refuses a duration in ms past the longest delay a Node timer keeps, naming the variable (a longer one fires after 1 ms)', () => {
    expect(problemsOf(() => loadConfig(spec, { PRUNE_INTERVAL_MS: '2592000000' }))).toEqual([
      `PRUNE_INTERVAL_MS must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest delay Node's timers keep), got 2592000000`,
    ]);
    expect(problemsOf(() => loadConfig(spec, { RETRY_DELAYS_MS: `1000,${MAX_TIMER_MS + 1}` }))[0]).toMatch(/^RETRY_DELAYS_MS must be at most/);
    expect(loadConfig(spec, { PRUNE_INTERVAL_MS: String(MAX_TIMER_MS) }).PRUNE_INTERVAL_MS).toBe(MAX_TIMER_MS);
    // Not a duration in ms, or one only compared with elapsed time (a month of failures before a webhook is disabled): no such bound.
    expect(loadConfig(spec, { RETENTION_DAYS: '3000000000' }).RETENTION_DAYS).toBe(3_000_000_000);
    const compared = { DISABLE_AFTER_MS: int('Failing this long', { default: '86400000', min: 0, comparedOnly: true }) };
    expect(loadConfig(compared, { DISABLE_AFTER_MS: '2592000000' }).DISABLE_AFTER_MS).toBe(2_592_000_000);
  });

  it('refuses a zero in a retry schedule at start, naming the variable (the broker refused it later, naming a queue)', () => {
    expect(problemsOf(() => loadConfig(spec, { RETRY_DELAYS_MS: '0,1000' }))).toEqual(['RETRY_DELAYS_MS must be comma-separated positive integers, got "0"']);
  });

  it('refuses a bearer key with a space or a line break (it could never match a request), without showing it', () => {
    const keys = { ADMIN_KEY: optionalBearerKey('Admin key', { secret: true }) };
    const problems = problemsOf(() => loadConfig(keys, { ADMIN_KEY: 'k3y-value\n' }));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^ADMIN_KEY must not contain spaces or line breaks/);
    expect(problems[0]).not.toContain('k3y-value');
    expect(loadConfig(keys, { ADMIN_KEY: 'k3y-value' }).ADMIN_KEY).toBe('k3y-value');
    expect(loadConfig(keys, {}).ADMIN_KEY).toBeUndefined();
  });

  // HERALD_ADMIN_KEY=admin was taken, on a port a cluster could reach.
  it('refuses a bearer key shorter than its minLength at start, saying how to make one, without showing it', () => {
    const keys = { ADMIN_KEY: optionalBearerKey('Admin key', { secret: true, minLength: 32 }) };
    const problems = problemsOf(() => loadConfig(keys, { ADMIN_KEY: 'admin' }));
    expect(problems).toEqual(['ADMIN_KEY must be at least 32 characters, got 5 (a short key can be guessed): make one with `openssl rand -hex 32`']);
    const long = 'a'.repeat(32);
    expect(loadConfig(keys, { ADMIN_KEY: long }).ADMIN_KEY).toBe(long);
    expect(loadConfig(keys, {}).ADMIN_KEY).toBeUndefined();
    expect(keys.ADMIN_KEY.description).toBe('Admin key; at least 32 characters (make one with `openssl rand -hex 32`)');
  });
});
