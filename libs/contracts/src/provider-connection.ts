import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { Parsed } from './parse.ts';

/**
 * How a pusher reaches a provider: the endpoint (host, port), the CA bundle it trusts there and
 * an HTTP CONNECT egress proxy. The same checks run at the admin API, in the CLI and at pusher
 * start-up, so a setting is refused with the same sentence wherever it is given.
 */

/** A CA bundle may hold many certificates (a full root store is about 200 KB). */
export const CA_PEM_MAX_BYTES = 512 * 1024;

/** An HTTP CONNECT proxy, from an HTTPS_PROXY-style URL `http://[user:password@]host:port`. */
export interface ProxyAddress {
  host: string;
  port: number;
  username?: string;
  password?: string;
}

/** A provider connection with every part optional (unset: the pusher's default is used). */
export interface ProviderConnection {
  host?: string;
  port?: number;
  caPem?: string;
  proxyUrl?: string;
}

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** Why `host` is not a host name or IP address, or undefined. */
export function hostProblem(host: string): string | undefined {
  return isIP(host) !== 0 || HOSTNAME.test(host) ? undefined : `must be a host name or an IP address (no scheme, port or path), got "${host}"`;
}

/** Why `port` is not a TCP port, or undefined. */
export function portProblem(port: number): string | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? undefined : `must be a port from 1 to 65535, got ${port}`;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Why `pem` is not a bundle of one or more PEM certificates, or undefined. */
export function caPemProblem(pem: string): string | undefined {
  if (Buffer.byteLength(pem, 'utf8') > CA_PEM_MAX_BYTES) return `must be at most ${CA_PEM_MAX_BYTES} bytes of PEM`;
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) return 'must be PEM certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)';
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return `certificate ${i + 1} of ${blocks.length} is not a valid X.509 certificate: ${(err as Error).message}`;
    }
  }
  return undefined;
}

/** An APNs client certificate's first PEM certificate, or why it cannot be read. */
function firstCertificate(pem: string): X509Certificate | string {
  const block = pem.match(PEM_CERTIFICATE)?.[0];
  if (block === undefined) return 'must hold a PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)';
  try {
    return new X509Certificate(block);
  } catch (err) {
    return `is not a valid X.509 certificate: ${(err as Error).message}`;
  }
}

const validityOf = (cert: X509Certificate) => ({ fromMs: Date.parse(cert.validFrom), untilMs: Date.parse(cert.validTo) });

/** When an APNs client certificate (its first PEM certificate) starts and stops being valid, epoch ms; undefined when it cannot be read. */
export function apnsCertificateValidity(pem: string): { fromMs: number; untilMs: number } | undefined {
  const cert = firstCertificate(pem);
  return typeof cert === 'string' ? undefined : validityOf(cert);
}

/** Why a certificate valid over `validity` is refused at `nowMs` (expired, or not valid yet), or undefined. */
export function apnsCertificateDateProblem(validity: { fromMs: number; untilMs: number }, nowMs: number): string | undefined {
  if (validity.untilMs <= nowMs) {
    return `expired on ${new Date(validity.untilMs).toISOString()}: APNs refuses it; renew it in your Apple Developer account, or use a .p8 signing key (auth "token"), which does not expire`;
  }
  if (validity.fromMs > nowMs) return `is not valid until ${new Date(validity.fromMs).toISOString()}`;
  return undefined;
}

/**
 * What is wrong with an APNs client certificate (its first PEM certificate) at `nowMs`, or undefined:
 * one that cannot be read, has expired or is not valid yet. Apple's TLS handshake refuses such a
 * certificate, which a pusher can only see as a connection closed before it was ready: retried and
 * parked as a network failure, never as the app's credentials.
 */
export function apnsCertificateProblem(pem: string, nowMs = Date.now()): string | undefined {
  const cert = firstCertificate(pem);
  return typeof cert === 'string' ? cert : apnsCertificateDateProblem(validityOf(cert), nowMs);
}

const proxyShapeProblem = (u: URL): string | undefined => {
  if (u.protocol !== 'http:') return `must use http:// (a CONNECT proxy reached over plain TCP), got ${u.protocol}//`;
  if (u.port === '') return 'must name the port: http://host:port';
  if ((u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.hash !== '') return 'must be http://[user:password@]host:port with no path, query or fragment';
  if (u.password !== '' && u.username === '') return 'has a password without a user name';
  return undefined;
};

/** Parse an HTTPS_PROXY-style URL; the reason never repeats the URL (it may hold a password). */
export function parseProxyUrl(raw: string): Parsed<ProxyAddress> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be a URL like http://host:port or http://user:password@host:port' };
  }
  const shape = proxyShapeProblem(u);
  if (shape !== undefined) return { ok: false, reason: shape };
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const hostIssue = hostProblem(host);
  if (hostIssue !== undefined) return { ok: false, reason: `host ${hostIssue}` };
  return {
    ok: true,
    value: {
      host,
      port: Number(u.port),
      ...(u.username !== '' && { username: decodeURIComponent(u.username) }),
      ...(u.password !== '' && { password: decodeURIComponent(u.password) }),
    },
  };
}

/** The proxy URL without its credentials, for logs and views. */
export function redactProxyUrl(raw: string): string {
  const parsed = parseProxyUrl(raw);
  if (!parsed.ok) return '(invalid proxy URL)';
  const host = isIP(parsed.value.host) === 6 ? `[${parsed.value.host}]` : parsed.value.host;
  return `http://${parsed.value.username !== undefined ? '***@' : ''}${host}:${parsed.value.port}`;
}

const refined = (problem: (v: string) => string | undefined) =>
  z.string().superRefine((v, ctx) => {
    const p = problem(v);
    if (p !== undefined) ctx.addIssue({ code: 'custom', message: p });
  });

const Host = refined(hostProblem);
const Port = z.number().int().min(1, 'must be a port from 1 to 65535').max(65535, 'must be a port from 1 to 65535');
const CaPem = refined(caPemProblem);
const ProxyUrl = refined((v) => {
  const parsed = parseProxyUrl(v);
  return parsed.ok ? undefined : parsed.reason;
});

/**
 * An app's APNs connection settings. Each field: a value sets it, null clears it (the pusher's
 * default applies again), absent keeps what is stored. `proxyUrl` is stored sealed.
 */
export const ApnsConnection = z.strictObject({
  address: Host.nullable().optional().describe("APNs host instead of Apple's (or the sandbox's, for endpoint local)"),
  port: Port.nullable().optional().describe('APNs port (default 443)'),
  caPem: CaPem.nullable().optional().describe("PEM CA bundle trusted at the host instead of Node's built-in roots"),
  proxyUrl: ProxyUrl.nullable().optional().describe('HTTP CONNECT egress proxy, http://[user:password@]host:port (stored sealed, never shown)'),
});
export type ApnsConnection = z.infer<typeof ApnsConnection>;

/** An app's FCM connection settings, with the same rules as ApnsConnection. */
export const FcmConnection = z.strictObject({
  host: Host.nullable().optional().describe('FCM host instead of fcm.googleapis.com (or the sandbox, for endpoint local)'),
  port: Port.nullable().optional().describe('FCM port (default 443)'),
  caPem: CaPem.nullable().optional().describe("PEM CA bundle trusted at the host instead of Node's built-in roots"),
  proxyUrl: ProxyUrl.nullable().optional().describe("HTTP CONNECT egress proxy for FCM and Google's token server, http://[user:password@]host:port (stored sealed, never shown)"),
});
export type FcmConnection = z.infer<typeof FcmConnection>;

/** What the admin API and CLI show of a connection: the CA and the proxy only as set or not (a proxy URL may hold a password). */
export const ApnsConnectionView = z.object({ address: z.string().nullable(), port: z.number().int().nullable(), ca: z.boolean(), proxy: z.boolean() });
export type ApnsConnectionView = z.infer<typeof ApnsConnectionView>;
export const FcmConnectionView = z.object({ host: z.string().nullable(), port: z.number().int().nullable(), ca: z.boolean(), proxy: z.boolean() });
export type FcmConnectionView = z.infer<typeof FcmConnectionView>;
