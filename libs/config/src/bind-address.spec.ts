import { describe, expect, it } from 'vitest';
import { bindAddress, LOOPBACK } from './bind-address.ts';
import { loadConfig } from './load-config.ts';
import { commonConfig } from './common.ts';

describe('bind addresses (HTTP_HOST, API_HOST, SANDBOX_HOST)', () => {
  const spec = { X_HOST: bindAddress('where') };

  it('default to loopback', () => {
    expect(loadConfig(spec, {}).X_HOST).toBe('127.0.0.1');
    expect(LOOPBACK).toBe('127.0.0.1');
    expect(loadConfig(commonConfig, {}).HTTP_HOST).toBe('127.0.0.1');
  });

  it('take IP literals and localhost', () => {
    for (const v of ['0.0.0.0', '::', '::1', '10.1.2.3', 'fd00::2', 'localhost'])
      expect(loadConfig(spec, { X_HOST: v }).X_HOST).toBe(v);
    expect(loadConfig(spec, { X_HOST: '[::1]' }).X_HOST).toBe('::1');
  });

  it('refuse host names and junk, naming the variable', () => {
    for (const v of ['all', 'example.com', '0.0.0.0:80', '', '256.1.1.1']) {
      expect(() => loadConfig(spec, { X_HOST: v }), v).toThrow(/X_HOST must be an IP address to listen on/);
    }
  });
});
