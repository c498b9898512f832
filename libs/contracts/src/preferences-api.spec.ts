import { describe, expect, it } from 'vitest';
import { describeIssues } from './parse.ts';
import { MuteCreate, MuteDelete, OptOutChange, UserOfApp } from './preferences-api.ts';

const issues = (schema: { safeParse(v: unknown): { success: boolean; error?: import('zod').ZodError } }, value: unknown): string => {
  const r = schema.safeParse(value);
  return r.success || r.error === undefined ? '' : describeIssues(r.error);
};

describe('opt-out, mute and device-list contracts', () => {
  it('an opt-out names its app, user and category', () => {
    expect(issues(OptOutChange, { app: 'demo', userId: 'u1', category: 'marketing' })).toBe('');
    expect(issues(OptOutChange, { userId: 'u1', category: 'marketing' })).toMatch(/^app: /);
    expect(issues(OptOutChange, { app: 'Demo!', userId: 'u1', category: 'marketing' })).toMatch(/^app: must be lower-case/);
    expect(issues(OptOutChange, { app: 'demo', userId: '', category: 'marketing' })).toMatch(/^userId: /);
    expect(issues(OptOutChange, { app: 'demo', userId: 'u1', category: 'x'.repeat(101) })).toMatch(/^category: /);
  });

  it('unknown fields are refused by name (a typo never silently widens an opt-out)', () => {
    expect(issues(OptOutChange, { app: 'demo', userId: 'u1', category: 'c', apps: ['x'] })).toMatch(/apps/);
    expect(issues(UserOfApp, { app: 'demo', userId: 'u1', user: 'u2' })).toMatch(/user/);
  });

  it('a mute until is an ISO instant with an offset, or null, or absent', () => {
    const base = { app: 'demo', userId: 'u1', objectId: 'thread:42' };
    expect(issues(MuteCreate, base)).toBe('');
    expect(issues(MuteCreate, { ...base, until: null })).toBe('');
    expect(issues(MuteCreate, { ...base, until: '2030-01-01T00:00:00+02:00' })).toBe('');
    expect(issues(MuteCreate, { ...base, until: 'tomorrow' })).toMatch(/^until: /);
    expect(issues(MuteCreate, { ...base, until: '2030-01-01T00:00:00' })).toMatch(/^until: /);
    expect(issues(MuteCreate, { ...base, objectId: '' })).toMatch(/^objectId: /);
    expect(issues(MuteDelete, { ...base, until: null })).toMatch(/until/);
  });

  it('a list query is one user of one app, both as strings (a repeated ?app= is refused)', () => {
    expect(issues(UserOfApp, { app: 'demo', userId: 'u1' })).toBe('');
    expect(issues(UserOfApp, { app: ['demo', 'other'], userId: 'u1' })).toMatch(/^app: /);
    expect(issues(UserOfApp, { app: 'demo' })).toMatch(/^userId: /);
  });
});
