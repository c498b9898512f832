import type { ApnsConnection, FcmConnection, Platform, ProviderConnection } from '@herald/contracts';
import type { SecretBox } from './secret-box.ts';

/** An app's connection settings for one platform as the admin API takes them (null clears, absent keeps). */
export type ConnectionChange = ApnsConnection | FcmConnection | null | undefined;

/** The columns of one platform's connection settings (migration 0011). */
export interface ConnectionColumns {
  host: string | null;
  port: number | null;
  caPem: string | null;
  proxySecret: string | null;
}

/** The proxy URL's associated data: an envelope cannot be moved to another app or platform, nor swapped with a credential. */
export const proxyContext = (platform: Platform, app: string): string => `${platform}-proxy:${app}`;

const hostOf = (c: ApnsConnection | FcmConnection): string | null | undefined => ('address' in c ? c.address : 'host' in c ? c.host : undefined);

/** Whether the change sets anything (clearing needs no credentials). */
export const setsConnection = (c: ConnectionChange): boolean =>
  c != null && [hostOf(c), c.port, c.caPem, c.proxyUrl].some((v) => v !== undefined && v !== null);

/** Whether the change touches any column (then credentials_version moves and pushers rebuild). */
export const touchesConnection = (c: ConnectionChange): boolean =>
  c === null || (c !== undefined && [hostOf(c), c.port, c.caPem, c.proxyUrl].some((v) => v !== undefined));

/** The columns to write: every column for null (clear all), only the given fields otherwise; the proxy URL sealed. */
export function connectionColumns(platform: Platform, app: string, c: ConnectionChange, seal: () => SecretBox): Partial<ConnectionColumns> {
  if (c === undefined) return {};
  if (c === null) return { host: null, port: null, caPem: null, proxySecret: null };
  const host = hostOf(c);
  return {
    ...(host !== undefined && { host }),
    ...(c.port !== undefined && { port: c.port }),
    ...(c.caPem !== undefined && { caPem: c.caPem }),
    ...(c.proxyUrl !== undefined && { proxySecret: c.proxyUrl === null ? null : seal().seal(c.proxyUrl, proxyContext(platform, app)) }),
  };
}

/** The stored settings with the proxy URL opened, or undefined when none is set. */
export function readConnection(r: ConnectionColumns, openProxy: (envelope: string) => string): ProviderConnection | undefined {
  const c: ProviderConnection = {
    ...(r.host !== null && { host: r.host }),
    ...(r.port !== null && { port: r.port }),
    ...(r.caPem !== null && { caPem: r.caPem }),
    ...(r.proxySecret !== null && { proxyUrl: openProxy(r.proxySecret) }),
  };
  return Object.keys(c).length === 0 ? undefined : c;
}
