import { BlockList, isIP } from 'node:net';

export const MAX_CALLBACK_URL_LENGTH = 2048;

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Addresses a callback must not reach: private, link-local (cloud metadata), shared (CGNAT),
 * benchmarking, multicast, reserved, unspecified; IPv6 unique-local, link-local, multicast, and
 * local-use NAT64 (64:ff9b:1::/48, whose IPv4 embedding depends on the network). The well-known
 * NAT64 prefix (64:ff9b::/96) is judged by the IPv4 address it carries: on an IPv6-only network
 * with DNS64 every IPv4-only receiver resolves there.
 */
const INTERNAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  INTERNAL.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [['::', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b:1::', 48]] as const) INTERNAL.addSubnet(net, bits, 'ipv6');
const NAT64 = new BlockList();
NAT64.addSubnet('64:ff9b::', 96, 'ipv6');

/** The IPv4 address in the last 32 bits of an IPv6 address (RFC 6052 for a /96 prefix). */
function lastIpv4Of(v6: string): string | undefined {
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(v6)?.[1];
  if (dotted !== undefined) return dotted;
  const [head = '', tail = ''] = v6.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = v6.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  if (groups.length !== 8) return undefined;
  const [a, b] = [parseInt(groups[6] ?? '', 16), parseInt(groups[7] ?? '', 16)];
  return Number.isNaN(a) || Number.isNaN(b) ? undefined : `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

/**
 * Why a webhook must not connect to `address` (an IP its host resolved to), or undefined: the
 * loopback unless `allowLoopback` (WEBHOOK_ALLOW_HTTP_LOCALHOST), or any internal range above. The
 * pusher asks this of every address at connect time, so a name that resolves inside (an internal
 * service, a wildcard DNS name such as 10.0.0.5.nip.io, a rebinding one) is refused too.
 */
export function internalAddressProblem(address: string, allowLoopback: boolean): string | undefined {
  const ip = literalIp(address);
  if (ip === undefined) return undefined;
  if (ip.family === 'ipv6' && NAT64.check(ip.address, 'ipv6')) {
    const v4 = lastIpv4Of(ip.address);
    return v4 === undefined ? 'a private, link-local or reserved address' : internalAddressProblem(v4, allowLoopback);
  }
  if (LOOPBACK.check(ip.address, ip.family)) return allowLoopback ? undefined : 'a loopback address (this machine)';
  return INTERNAL.check(ip.address, ip.family) ? 'a private, link-local or reserved address' : undefined;
}

/** The IP a URL hostname spells literally (IPv4-mapped IPv6 as IPv4), or undefined for a name. */
function literalIp(hostname: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const bare = hostname.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped !== undefined) return { address: mapped, family: 'ipv4' };
  const v = isIP(bare);
  return v === 0 ? undefined : { address: bare, family: v === 4 ? 'ipv4' : 'ipv6' };
}

const isLoopback = (hostname: string): boolean => {
  if (hostname.replace(/\.$/, '').toLowerCase() === 'localhost') return true;
  const ip = literalIp(hostname);
  return ip !== undefined && LOOPBACK.check(ip.address, ip.family);
};

/**
 * Why a subscription's callback URL is refused, or undefined if it is fine: an absolute https URL
 * without credentials or fragment, not naming a private, link-local or loopback address; the
 * loopback (localhost, 127.0.0.0/8, ::1) only with `allowHttpLocalhost` (dev, tests), and then
 * over http too. Names are not resolved here: the webhook-pusher refuses, when it connects, a name
 * that resolves inside (internalAddressProblem).
 */
export function callbackUrlProblem(raw: string, options: { allowHttpLocalhost: boolean }): string | undefined {
  if (raw.length > MAX_CALLBACK_URL_LENGTH) return `must be at most ${MAX_CALLBACK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must use https, not ${url.protocol.replace(/:$/, '')}`;
  if (url.hostname === '') return 'must name a host';
  const loopback = isLoopback(url.hostname);
  if (loopback && !options.allowHttpLocalhost) return 'must not point at this machine (localhost is allowed only when WEBHOOK_ALLOW_HTTP_LOCALHOST is set)';
  if (url.protocol === 'http:' && !loopback) return 'must use https';
  const ip = literalIp(url.hostname);
  if (ip !== undefined && INTERNAL.check(ip.address, ip.family)) return 'must not point at a private, link-local, reserved or unspecified address';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.hash !== '') return 'must not have a fragment (#...)';
  return undefined;
}

/** host:port a URL sends to (the key of the per-destination concurrency bound and rate budget). */
export function destinationOf(raw: string): string {
  const url = new URL(raw);
  return `${url.hostname}:${url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80'}`;
}
