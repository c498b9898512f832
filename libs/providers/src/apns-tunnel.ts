import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { tunnelledTls } from './proxy-tunnel.ts';
import type { ApnsSettings } from './settings.ts';

/**
 * node-apn options that send its HTTP/2 session through `settings.proxy`. node-apn's own `proxy`
 * option is not used: it sends no Proxy-Authorization, and the TLS it runs over its tunnel gets
 * neither `ca` nor the client certificate. node-apn hands its options to http2.connect, so a
 * `createConnection` there runs TLS (ALPN h2, the CA, the certificate for certificate auth) over
 * a tunnel of our own. Each new session (node-apn reconnects after an error) opens a new tunnel.
 */
export function apnsTunnelOptions(s: ApnsSettings): { createConnection?: () => Duplex } {
  const proxy = s.proxy;
  if (proxy === undefined) return {};
  const clientCert = s.auth.kind === 'certificate' ? { cert: s.auth.cert, key: s.auth.key, ...(s.auth.passphrase !== undefined && { passphrase: s.auth.passphrase }) } : {};
  return {
    createConnection: () =>
      tunnelledTls(proxy, s.address, s.port, {
        // The certificate is checked against the address (host), SNI only for a name.
        host: s.address,
        ...(isIP(s.address) === 0 && { servername: s.address }),
        ALPNProtocols: ['h2'],
        ...(s.ca !== undefined && { ca: s.ca }),
        ...clientCert,
      }),
  };
}
