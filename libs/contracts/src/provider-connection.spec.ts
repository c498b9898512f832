import { generate } from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeIssues } from './parse.ts';
import { ApnsConnection, FcmConnection, caPemProblem, hostProblem, parseProxyUrl, redactProxyUrl } from './provider-connection.ts';

let ca: string;
beforeAll(async () => {
  ca = (await generate([{ name: 'commonName', value: 'spec CA' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' })).cert;
});

describe('proxy URLs', () => {
  it('parse http://host:port, with an optional percent-encoded user and password', () => {
    expect(parseProxyUrl('http://127.0.0.1:3128')).toEqual({ ok: true, value: { host: '127.0.0.1', port: 3128 } });
    expect(parseProxyUrl('http://us%40er:p%3Ass@proxy.corp.example:8080/')).toEqual({
      ok: true,
      value: { host: 'proxy.corp.example', port: 8080, username: 'us@er', password: 'p:ss' },
    });
    expect(parseProxyUrl('http://[::1]:3128')).toEqual({ ok: true, value: { host: '::1', port: 3128 } });
  });

  it('refuse other schemes, a missing port, paths and garbage, without repeating the password', () => {
    const reason = (raw: string) => {
      const r = parseProxyUrl(raw);
      return r.ok ? 'accepted' : r.reason;
    };
    expect(reason('https://proxy:3128')).toMatch(/must use http:\/\//);
    expect(reason('socks5://proxy:1080')).toMatch(/must use http:\/\//);
    expect(reason('http://proxy')).toMatch(/must name the port/);
    expect(reason('http://proxy:3128/path')).toMatch(/no path/);
    expect(reason('proxy:3128')).toMatch(/must use http/);
    expect(reason('not a url')).toMatch(/must be a URL/);
    expect(reason('http://:secret@proxy:3128')).toMatch(/password without a user/);
    expect(reason('http://user:hunter2@proxy')).not.toContain('hunter2');
  });

  it('are shown without their credentials', () => {
    expect(redactProxyUrl('http://user:hunter2@proxy:3128')).toBe('http://***@proxy:3128');
    expect(redactProxyUrl('http://proxy:3128')).toBe('http://proxy:3128');
  });
});

describe('hosts and CA bundles', () => {
  it('accept host names and IP addresses, refuse URLs and host:port', () => {
    expect(hostProblem('api.push.apple.com')).toBeUndefined();
    expect(hostProblem('127.0.0.1')).toBeUndefined();
    expect(hostProblem('::1')).toBeUndefined();
    expect(hostProblem('https://api.push.apple.com')).toMatch(/host name or an IP address/);
    expect(hostProblem('relay:443')).toMatch(/host name or an IP address/);
  });

  it('accept PEM certificates and refuse keys, truncated certificates and text', () => {
    expect(caPemProblem(ca)).toBeUndefined();
    expect(caPemProblem(`${ca}\n${ca}`)).toBeUndefined();
    expect(caPemProblem('-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n')).toMatch(/must be PEM certificates/);
    expect(caPemProblem('hello')).toMatch(/must be PEM certificates/);
    const broken = ca.replace(/\n[A-Za-z0-9+/]{20}/, '\n');
    expect(caPemProblem(`${ca}${broken}`)).toMatch(/certificate 2 of 2 is not a valid X\.509 certificate/);
  });
});

describe('connection schemas (admin API and CLI)', () => {
  it('name each failing field', () => {
    const r = ApnsConnection.safeParse({ address: 'http://x', port: 70000, caPem: 'nope', proxyUrl: 'ftp://p:1' });
    expect(r.success).toBe(false);
    const text = r.success ? '' : describeIssues(r.error);
    expect(text).toMatch(/address: must be a host name/);
    expect(text).toMatch(/port: must be a port from 1 to 65535/);
    expect(text).toMatch(/caPem: must be PEM certificates/);
    expect(text).toMatch(/proxyUrl: must use http:\/\//);
  });

  it('take null as "clear" and refuse unknown fields', () => {
    expect(FcmConnection.parse({ host: null, proxyUrl: 'http://u:p@127.0.0.1:3128', caPem: ca })).toEqual({ host: null, proxyUrl: 'http://u:p@127.0.0.1:3128', caPem: ca });
    expect(FcmConnection.safeParse({ address: 'x' }).success).toBe(false);
  });
});
