import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { describe, expect, it } from 'vitest';
import { createAppBans, isCredentialFailure } from './app-ban.ts';

const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
const bad = { kind: 'permanent', reason: 'InvalidProviderToken' } as const;

describe('app bans', () => {
  it('knows credential and topic failures from other permanent ones', () => {
    expect(isCredentialFailure(bad)).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'TopicDisallowed' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'third-party-auth-error: PERMISSION_DENIED' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'credentials: app "x" has no APNs credentials' })).toBe(true);
    expect(isCredentialFailure({ kind: 'permanent', reason: 'PayloadTooLarge' })).toBe(false);
    expect(isCredentialFailure({ kind: 'transient', reason: 'InvalidProviderToken' })).toBe(false);
  });

  it('bans after threshold failures within the window, for the cool-off, with a metric', async () => {
    let t = 0;
    const registry = new Registry();
    const bans = createAppBans({ threshold: 3, windowMs: 1000, cooldownMs: 5000 }, logger, registry, () => t);
    bans.observe('a', bad);
    t = 900;
    bans.observe('a', bad);
    t = 1500; // the first failure left the window
    bans.observe('a', bad);
    expect(bans.banned('a')).toBeUndefined();
    bans.observe('a', bad);
    expect(bans.banned('a')?.until.getTime()).toBe(6500);
    expect(bans.banned('b')).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 1/);
    t = 6500;
    expect(bans.banned('a')).toBeUndefined();
    expect(await registry.getSingleMetricAsString('herald_app_banned')).toMatch(/herald_app_banned\{app="a"\} 0/);
  });

  it('ignores delivered pushes and non-credential failures', () => {
    const bans = createAppBans({ threshold: 1, windowMs: 1000, cooldownMs: 1000 }, logger, new Registry());
    bans.observe('a', { kind: 'delivered' });
    bans.observe('a', { kind: 'permanent', reason: 'BadExpirationDate' });
    expect(bans.banned('a')).toBeUndefined();
  });
});
