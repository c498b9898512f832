import { isIP } from 'node:net';
import type { VarSpec } from './vars.ts';

/** Loopback: what every Herald server listens on unless its *_HOST variable says otherwise. */
export const LOOPBACK = '127.0.0.1';

/**
 * The address a server listens on: an IP literal (`127.0.0.1`, `::1`, `0.0.0.0` for every IPv4
 * interface, `::` for every interface, or one of this machine's addresses) or `localhost`.
 * A host name other than localhost is refused: which interface it means would depend on DNS.
 */
export const bindAddress = (description: string, opts: { default?: string } = {}): VarSpec<string> => ({
  description,
  default: opts.default ?? LOOPBACK,
  secret: false,
  parse: (raw) => {
    const v = raw.trim().replace(/^\[(.*)\]$/, '$1');
    if (v === 'localhost' || isIP(v) !== 0) return v;
    throw new Error(
      `must be an IP address to listen on (127.0.0.1, ::1, 0.0.0.0, :: or one of this machine's addresses) or localhost, got "${raw}"`,
    );
  },
});
