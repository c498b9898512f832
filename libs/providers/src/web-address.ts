import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { addressRange } from '@herald/contracts';

/**
 * Where no push service is: the IANA special-purpose ranges that are not globally reachable
 * (RFC 6890 and the IPv4 / IPv6 Special-Purpose Address Registries), multicast and reserved space.
 * Loopback, link-local (169.254.169.254, a cloud's metadata service), RFC 1918, CGNAT and unique
 * local (fc00::/7) addresses are other machines of the deployment's own network. An IPv4-mapped
 * IPv6 address (::ffff:10.0.0.5) is judged as its IPv4 address (BlockList maps it).
 */
const NOT_GLOBAL: ReadonlyArray<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", the unspecified address
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.88.99.0', 24, 'ipv4'], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and the broadcast address
  ['::', 96, 'ipv6'], // unspecified, loopback, IPv4-compatible (deprecated)
  ['64:ff9b:1::', 48, 'ipv6'], // local-use NAT64
  ['100::', 64, 'ipv6'], // discard-only
  ['2001::', 23, 'ipv6'], // IETF protocol assignments (Teredo among them)
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['2002::', 16, 'ipv6'], // 6to4 (deprecated)
  ['3fff::', 20, 'ipv6'], // documentation
  ['5f00::', 16, 'ipv6'], // segment routing SIDs
  ['fc00::', 7, 'ipv6'], // unique local
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ['ff00::', 8, 'ipv6'], // multicast
];
const notGlobal = new BlockList();
for (const [network, prefix, family] of NOT_GLOBAL) notGlobal.addSubnet(network, prefix, family);

/**
 * Addresses that stand for the IPv4 address in their last 32 bits, which a translator on the path
 * reaches: RFC 6052's well-known NAT64 prefix, and RFC 6145's IPv4-translated addresses
 * (::ffff:0:0:0/96, a stateless translator's). BlockList maps only IPv4-mapped ones (::ffff:0:0/96).
 */
const translated = new BlockList();
translated.addSubnet('64:ff9b::', 96, 'ipv6');
translated.addSubnet('::ffff:0:0:0', 96, 'ipv6');

const familyOf = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** The IPv4 address a translated address stands for: its last 32 bits (64:ff9b::a00:5, 64:ff9b::10.0.0.5, ::ffff:0:a00:5). */
function embeddedIpv4(address: string): string {
  const tail = address.slice(address.lastIndexOf(':') + 1);
  if (tail.includes('.')) return tail;
  const [high = 0, low = 0] = address.split(':').slice(-2).map((g) => Number.parseInt(g || '0', 16));
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether an address is a public one (see NOT_GLOBAL), or in one of the ranges an operator allowed. */
export function addressAllowed(given: string, allowed?: BlockList): boolean {
  // A link-local answer may carry its interface (fe80::1%eth0): the address is what is judged.
  const address = given.replace(/%.*$/, '');
  const family = familyOf(address);
  if (allowed?.check(address, family) === true) return true;
  if (notGlobal.check(address, family)) return false;
  if (family === 'ipv6' && translated.check(address, 'ipv6')) return addressAllowed(embeddedIpv4(address), allowed);
  return true;
}

/** The ranges an operator allowed (WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES), as a BlockList; undefined for none. */
export function allowedRanges(entries: readonly string[] | undefined): BlockList | undefined {
  if (entries === undefined || entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const { network, prefix, family } = addressRange(entry);
    list.addSubnet(network, prefix, family);
  }
  return list;
}

const ALLOW_HINT = 'WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES lets a push service of your own on a private network through';

/**
 * The Web Push agent refused to connect: the endpoint's host is, or resolves only to, addresses
 * that are not public (SSRF: a name under an allowed pattern pointed at 127.0.0.1, 169.254.169.254,
 * 10.x). The message is the parked reason.
 */
export class EndpointAddressRefused extends Error {
  override readonly name = 'EndpointAddressRefused';
  constructor(host: string, addresses: readonly string[]) {
    const what =
      isIP(host) !== 0 ? `${host} is not a public address` : addresses.length === 1 ? `${host} resolves to ${addresses.join('')}, not a public address` : `${host} resolves to ${addresses.join(', ')}: none is a public address`;
    super(`endpoint-address-refused: ${what} (${ALLOW_HINT})`);
  }
}

/** Why Herald will not connect to this host when it is an IP address that is not public; undefined for a name or a public address. */
export function literalRefusal(host: string, allowed?: BlockList): EndpointAddressRefused | undefined {
  return isIP(host) !== 0 && !addressAllowed(host, allowed) ? new EndpointAddressRefused(host, [host]) : undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Resolver = (hostname: string, options: LookupOptions & { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * A `lookup` for net/tls.connect that hands the connection only the public addresses a name
 * resolves to (and those in `allowed`), and fails it with EndpointAddressRefused when there are
 * none. The address checked is the address connected to: no second resolution between the check
 * and the connect that a short-lived DNS answer could change (DNS rebinding).
 */
export function publicAddressLookup(allowed?: BlockList, resolve: Resolver = dns.lookup) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) {
        callback(err, options.all === true ? [] : '');
        return;
      }
      const usable = addresses.filter((a) => addressAllowed(a.address, allowed));
      const [first] = usable;
      if (first === undefined) callback(new EndpointAddressRefused(hostname, addresses.map((a) => a.address)), options.all === true ? [] : '');
      else if (options.all === true) callback(null, usable);
      else callback(null, first.address, first.family);
    });
  };
}
