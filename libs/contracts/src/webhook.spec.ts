import { describe, expect, it } from 'vitest';
import { callbackUrlProblem, destinationOf, internalAddressProblem } from './callback-url.ts';
import { computeDiff } from './change-diff.ts';
import { parseWith } from './parse.ts';
import { ChangeEvent } from './webhook.ts';
import { signWebhook, verifyWebhookSignature } from './webhook-signature.ts';
import { ChangePublish, SubscriptionCreate } from './webhook-api.ts';

describe('computeDiff', () => {
  it('reports changed, added and removed top-level fields, and nothing else', () => {
    const diff = computeDiff({ name: 'Spring', budget: 100, status: 'draft', gone: 1 }, { name: 'Spring', budget: 150, status: 'live', added: true });
    expect(diff).toEqual({
      budget: { old: 100, new: 150 },
      status: { old: 'draft', new: 'live' },
      gone: { old: 1, new: null },
      added: { old: null, new: true },
    });
  });

  it('compares nested objects and arrays structurally, ignoring key order', () => {
    const same = computeDiff({ targeting: { geo: ['DE', 'FR'], age: { min: 18, max: 65 } } }, { targeting: { age: { max: 65, min: 18 }, geo: ['DE', 'FR'] } });
    expect(same).toEqual({});
    const changed = computeDiff({ targeting: { geo: ['DE', 'FR'] } }, { targeting: { geo: ['FR', 'DE'] } });
    expect(changed).toEqual({ targeting: { old: { geo: ['DE', 'FR'] }, new: { geo: ['FR', 'DE'] } } });
  });

  it('treats a created or deleted resource as every field changing from or to null', () => {
    expect(computeDiff(null, { a: 1 })).toEqual({ a: { old: null, new: 1 } });
    expect(computeDiff({ a: 1 }, null)).toEqual({ a: { old: 1, new: null } });
  });

  it('does not count null → missing as a change, nor a type change as equal', () => {
    expect(computeDiff({ a: null }, {})).toEqual({});
    expect(computeDiff({ a: 1 }, { a: '1' })).toEqual({ a: { old: 1, new: '1' } });
  });
});

describe('webhook signatures', () => {
  const secret = 'whsec_test_0123456789abcdef';
  const body = JSON.stringify({ id: 'n1', diff: { a: { old: 1, new: 2 } } });

  it('verifies a signature made with the same secret over the same bytes', () => {
    const header = signWebhook(secret, 1_700_000_000, body);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(header, body, secret, { nowS: 1_700_000_010 })).toEqual({ ok: true, timestamp: 1_700_000_000 });
  });

  it('after a secret rotation, signs with the new and the previous secret: a receiver holding either verifies, another does not', () => {
    const rotated = 'whsec_rotated_0123456789abcdef';
    const header = signWebhook(rotated, 1_700_000_000, body, secret);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    const now = { nowS: 1_700_000_000 };
    expect(verifyWebhookSignature(header, body, rotated, now)).toEqual({ ok: true, timestamp: 1_700_000_000 });
    expect(verifyWebhookSignature(header, body, secret, now)).toEqual({ ok: true, timestamp: 1_700_000_000 });
    expect(verifyWebhookSignature(header, body, 'another-secret-0123456789', now)).toMatchObject({ ok: false });
  });

  it('refuses a changed body, another secret, a stale timestamp and a missing header', () => {
    const header = signWebhook(secret, 1_700_000_000, body);
    const now = { nowS: 1_700_000_000 };
    expect(verifyWebhookSignature(header, body.replace('2', '3'), secret, now)).toMatchObject({ ok: false, reason: 'signature does not match' });
    expect(verifyWebhookSignature(header, body, 'another-secret-0123456789', now)).toMatchObject({ ok: false });
    expect(verifyWebhookSignature(header, body, secret, { nowS: 1_700_000_301 })).toMatchObject({ ok: false, reason: expect.stringContaining('tolerance') });
    expect(verifyWebhookSignature(undefined, body, secret, now)).toMatchObject({ ok: false });
    const forgedTime = header.replace('t=1700000000', 't=1700000100');
    expect(verifyWebhookSignature(forgedTime, body, secret, { nowS: 1_700_000_100 })).toMatchObject({ ok: false, reason: 'signature does not match' });
  });
});

describe('callbackUrlProblem', () => {
  const prod = { allowHttpLocalhost: false };
  const dev = { allowHttpLocalhost: true };

  it('accepts https URLs, and http for localhost only when allowed', () => {
    expect(callbackUrlProblem('https://hooks.example.com/herald?x=1', prod)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1:8080/hook', dev)).toBeUndefined();
    expect(callbackUrlProblem('http://localhost/hook', dev)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1:8080/hook', prod)).toMatch(/this machine/);
    expect(callbackUrlProblem('https://localhost/hook', prod)).toMatch(/this machine/);
    expect(callbackUrlProblem('https://[::1]:8443/hook', dev)).toBeUndefined();
  });

  it('refuses private, link-local and unspecified addresses (cloud metadata, the internal network)', () => {
    for (const url of ['https://10.1.2.3/h', 'https://172.20.0.1/h', 'https://192.168.1.1/h', 'https://169.254.169.254/latest', 'https://0.0.0.0/h', 'https://[fd00::1]/h', 'https://[::ffff:10.0.0.1]/h']) {
      expect(callbackUrlProblem(url, dev), url).toMatch(/private, link-local/);
    }
    expect(callbackUrlProblem('https://8.8.8.8/h', prod)).toBeUndefined();
    expect(callbackUrlProblem('https://172.32.0.1/h', prod)).toBeUndefined();
  });

  it('names the addresses a webhook must not connect to, whatever name led there', () => {
    for (const address of ['10.0.0.5', '172.16.3.4', '192.168.0.9', '169.254.169.254', '100.64.1.1', '198.18.0.1', '224.0.0.251', '0.0.0.0', 'fd12::1', 'fe80::1', '64:ff9b::a00:5', '64:ff9b::10.0.0.5', '64:ff9b:1::a00:5', '::ffff:10.0.0.1']) {
      expect(internalAddressProblem(address, true), address).toBe('a private, link-local or reserved address');
    }
    expect(internalAddressProblem('127.0.0.1', false)).toBe('a loopback address (this machine)');
    expect(internalAddressProblem('::1', false)).toBe('a loopback address (this machine)');
    expect(internalAddressProblem('127.0.0.1', true)).toBeUndefined();
    expect(internalAddressProblem('8.8.8.8', false)).toBeUndefined();
    expect(internalAddressProblem('2606:4700::1111', false)).toBeUndefined();
    // DNS64 on an IPv6-only network: a public IPv4 receiver (93.184.215.14) behind the well-known NAT64 prefix is reachable; the loopback behind it is not.
    expect(internalAddressProblem('64:ff9b::5db8:d70e', false)).toBeUndefined();
    expect(internalAddressProblem('64:ff9b::7f00:1', false)).toBe('a loopback address (this machine)');
    expect(callbackUrlProblem('https://localhost./hook', prod)).toMatch(/this machine/);
  });

  it('refuses http elsewhere, other schemes, relative URLs, credentials and fragments', () => {
    expect(callbackUrlProblem('http://hooks.example.com/', dev)).toBe('must use https');
    expect(callbackUrlProblem('ftp://hooks.example.com/', dev)).toMatch(/https, not ftp/);
    expect(callbackUrlProblem('/hooks', dev)).toBe('must be an absolute URL');
    expect(callbackUrlProblem('https://user:pw@hooks.example.com/', dev)).toMatch(/user name/);
    expect(callbackUrlProblem('https://hooks.example.com/#x', dev)).toMatch(/fragment/);
    expect(callbackUrlProblem(`https://hooks.example.com/${'a'.repeat(2100)}`, dev)).toMatch(/at most/);
  });

  it('names the destination host and port', () => {
    expect(destinationOf('https://hooks.example.com/a')).toBe('hooks.example.com:443');
    expect(destinationOf('http://127.0.0.1:9000/a')).toBe('127.0.0.1:9000');
  });
});

describe('ChangeEvent', () => {
  it('accepts a change and names the failing fields of a bad one', () => {
    const ok = parseWith(ChangeEvent, { id: 'e1', resource: { type: 'campaign', id: 'c1' }, old: { a: 1 }, new: { a: 2 }, occurredAt: '2026-01-01T00:00:00Z' });
    expect(ok.ok).toBe(true);
    const bad = parseWith(ChangeEvent, { id: 'e1', resource: { type: 'campaign' }, old: null, new: null, occurredAt: 'yesterday' });
    expect(bad).toMatchObject({ ok: false });
    if (!bad.ok) {
      expect(bad.reason).toContain('resource.id');
      expect(bad.reason).toContain('occurredAt');
    }
  });

  it('refuses a state nested deeper than 32 levels, which could not be serialised again for its subscribers', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const event = { id: 'e1', resource: { type: 'campaign', id: 'c1' }, old: null, new: { x: deep }, occurredAt: '2026-01-01T00:00:00Z' };
    expect(() => JSON.stringify(event)).toThrow(RangeError);
    expect(parseWith(ChangeEvent, event)).toEqual({ ok: false, reason: 'schema violation: new: nests deeper than 32 levels' });
  });
});

// PostgreSQL refuses a NUL in text (SQLSTATE 22021): accepted at the door, the API answered 500, or 202 for a change the fan-out could not look up.
describe('webhook doors: text PostgreSQL cannot store', () => {
  it('refuses a NUL or a lone surrogate in a subscription\'s callbackUrl, resourceId or secret, and in a change\'s resource id, naming the field', () => {
    const sub = { callbackUrl: 'https://hooks.example.com/h', resourceType: 'campaign', resourceId: 'c1', secret: 'a'.repeat(16) };
    expect(parseWith(SubscriptionCreate, sub)).toMatchObject({ ok: true });
    for (const [field, value] of [['callbackUrl', 'https://hooks.example.com/h\u0000'], ['resourceId', 'c\u00001'], ['secret', `${'a'.repeat(16)}\u0000`], ['resourceId', 'c\ud8001']] as const) {
      const parsed = parseWith(SubscriptionCreate, { ...sub, [field]: value });
      expect([field, parsed.ok ? '' : parsed.reason]).toEqual([field, expect.stringContaining(`${field}: `)]);
    }
    const change = { id: 'ev-1', resource: { type: 'campaign', id: 'c\u00001' }, old: null, new: { state: 'live' } };
    const refused = parseWith(ChangePublish, change);
    expect(refused.ok ? '' : refused.reason).toContain('resource.id: ');
    expect(parseWith(ChangePublish, { ...change, resource: { type: 'campaign', id: 'c1' } })).toMatchObject({ ok: true });
    const badId = parseWith(ChangePublish, { ...change, id: 'ev\u00001', resource: { type: 'campaign', id: 'c1' } });
    expect(badId.ok ? '' : badId.reason).toContain('id: ');
  });
});
