import type { LookupAddress } from 'node:dns';
import { addressRange } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { addressAllowed, allowedRanges, EndpointAddressRefused, literalRefusal, publicAddressLookup } from './web-address.ts';

/** A resolver that answers `addresses` for every name, as dns.lookup with `all: true` does. */
const answering =
  (...addresses: string[]) =>
  (_host: string, _options: unknown, callback: (err: NodeJS.ErrnoException | null, found: LookupAddress[]) => void): void =>
    callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

/** What the lookup hands the connection: [error message, addresses] (with `all`), or [error message, address, family]. */
function lookUp(lookup: ReturnType<typeof publicAddressLookup>, all: boolean): Promise<unknown[]> {
  return new Promise((resolve) => lookup('push.example.com', { all }, (err, address, family) => resolve([err?.message, address, ...(all ? [] : [family])])));
}

describe('the addresses the Web Push agent connects to', () => {
  it('refuses loopback, link-local, private, shared, unspecified, multicast, reserved and documentation addresses, IPv4-mapped, NAT64 and IPv4-translated ones too', () => {
    const refused = [
      '127.0.0.1', '127.8.9.10', '10.0.0.5', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.251', '239.1.2.3', '240.0.0.1', '255.255.255.255', '192.0.2.7', '198.18.0.1', '192.0.0.8',
      '::', '::1', '::ffff:127.0.0.1', '::ffff:10.0.0.5', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'ff02::1', '2001:db8::1', '64:ff9b::a00:5', '64:ff9b::10.0.0.5', '64:ff9b:1::1',
      '::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:0:a9fe:a9fe',
    ];
    expect(refused.filter((a) => addressAllowed(a))).toEqual([]);
  });

  it("takes public addresses: the push services' own, IPv4 and IPv6, and a NAT64 or IPv4-translated address of a public one", () => {
    const taken = ['142.250.74.106', '8.8.8.8', '17.188.128.1', '172.32.0.1', '100.128.0.1', '2a00:1450:4001:80e::200a', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808', '::ffff:0:808:808'];
    expect(taken.filter((a) => !addressAllowed(a))).toEqual([]);
  });

  it('takes the ranges an operator allowed (WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES), and nothing else private', () => {
    const allowed = allowedRanges(['10.20.0.0/16', 'fd00::/8', '192.168.7.7']);
    expect(['10.20.3.4', '::ffff:10.20.0.1', 'fd00::9', '192.168.7.7'].filter((a) => !addressAllowed(a, allowed))).toEqual([]);
    expect(['10.21.0.1', '127.0.0.1', 'fc00::1', '192.168.7.8'].filter((a) => addressAllowed(a, allowed))).toEqual([]);
    expect(allowedRanges([])).toBeUndefined();
  });

  it('names the entry that is no address or range', () => {
    expect(addressRange('10.20.0.0/16')).toEqual({ network: '10.20.0.0', prefix: 16, family: 'ipv4' });
    expect(addressRange(' fd00::/8 ')).toEqual({ network: 'fd00::', prefix: 8, family: 'ipv6' });
    expect(addressRange('192.168.7.7')).toEqual({ network: '192.168.7.7', prefix: 32, family: 'ipv4' });
    expect(() => addressRange('push.internal')).toThrow('"push.internal" is not an IP address or CIDR range');
    expect(() => addressRange('10.0.0.0/33')).toThrow('"10.0.0.0/33": the prefix length must be 0 to 32');
    expect(() => addressRange('fd00::/x')).toThrow('"fd00::/x": the prefix length must be 0 to 128');
    expect(() => addressRange('10.0.0.0/8/8')).toThrow(/is not an IP address or CIDR range/);
  });

  it('hands the connection only the public addresses a name resolves to, in the shape asked for; none: refused, naming them', async () => {
    expect(await lookUp(publicAddressLookup(undefined, answering('10.0.0.5', '142.250.74.106', '::1', '2a00:1450::1')), true)).toEqual([
      undefined,
      [{ address: '142.250.74.106', family: 4 }, { address: '2a00:1450::1', family: 6 }],
    ]);
    expect(await lookUp(publicAddressLookup(undefined, answering('10.0.0.5', '142.250.74.106')), false)).toEqual([undefined, '142.250.74.106', 4]);
    const refused = 'endpoint-address-refused: push.example.com resolves to 10.0.0.5, 169.254.169.254: none is a public address';
    for (const all of [true, false]) {
      const [message] = await lookUp(publicAddressLookup(undefined, answering('10.0.0.5', '169.254.169.254')), all);
      expect(message).toMatch(new RegExp(`^${refused} \\(WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES`));
    }
    expect((await lookUp(publicAddressLookup(undefined, answering('10.0.0.5')), false))[0]).toMatch(/^endpoint-address-refused: push.example.com resolves to 10.0.0.5, not a public address \(/);
    expect(await lookUp(publicAddressLookup(allowedRanges(['10.0.0.0/8']), answering('10.0.0.5', '169.254.169.254')), false)).toEqual([undefined, '10.0.0.5', 4]);
  });

  it('passes a resolver error on as it is (a transport error: retried)', async () => {
    const failing = (_h: string, _o: unknown, callback: (err: NodeJS.ErrnoException | null, found: LookupAddress[]) => void): void =>
      callback(Object.assign(new Error('getaddrinfo ENOTFOUND push.example.com'), { code: 'ENOTFOUND' }), []);
    const [message] = await lookUp(publicAddressLookup(undefined, failing), true);
    expect(message).toBe('getaddrinfo ENOTFOUND push.example.com');
  });

  it('refuses an endpoint whose host is itself an address that is not public, before any lookup', () => {
    expect(literalRefusal('10.0.0.5')).toBeInstanceOf(EndpointAddressRefused);
    expect(literalRefusal('::1')?.message).toMatch(/^endpoint-address-refused: ::1 is not a public address \(/);
    expect(literalRefusal('10.0.0.5', allowedRanges(['10.0.0.0/24']))).toBeUndefined();
    expect(literalRefusal('142.250.74.106')).toBeUndefined();
    expect(literalRefusal('fcm.googleapis.com')).toBeUndefined();
  });
});
