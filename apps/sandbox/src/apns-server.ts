import http2 from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { ConnectionTokens, ProviderTokenVerifier, type ProviderTokenKeys } from './apns-jwt.ts';
import { handleApnsRequest } from './apns-handler.ts';
import { certificateTopic } from './apns-topic.ts';
import { recordExchange, type SandboxContext } from './exchange.ts';
import { readBody } from './read-body.ts';

export interface ApnsServerOptions {
  cert: string;
  key: string;
  /** The sandbox's own key, or every key it knows (its own plus those minted through POST /credentials). */
  providerKey: ProviderTokenKeys;
  /** PEM CAs whose client certificates count as certificate-based authentication. */
  clientCa?: string;
}

/** The streams a connection may have open once APNs knows who it is (Apple promises no number: "don't assume a specific number of streams"). */
export const APNS_MAX_STREAMS = 1000;

/** Connections already given APNS_MAX_STREAMS (one SETTINGS frame each: Node refuses more than 10 unacknowledged). */
const widened = new WeakSet<http2.Http2Session>();

/**
 * Apple, "Sending notification requests to APNs": "when using an authentication token, APNs allows
 * only one stream until you post a request with a valid authentication token". A connection starts
 * with one stream and is given APNS_MAX_STREAMS (a SETTINGS frame) after its first request whose
 * provider token checked out, or at once when it presented a trusted client certificate.
 */
function allowStreams(session: http2.Http2Session): void {
  if (session.destroyed || widened.has(session)) return;
  widened.add(session);
  session.settings({ maxConcurrentStreams: APNS_MAX_STREAMS });
}

/** An HTTP/2-only TLS server speaking the APNs provider API (`POST /3/device/<token>`). */
export function createApnsServer(options: ApnsServerOptions, ctx: SandboxContext): http2.Http2SecureServer {
  const server = http2.createSecureServer({
    cert: options.cert,
    key: options.key,
    allowHTTP1: false,
    settings: { maxConcurrentStreams: 1 },
    ...(options.clientCa !== undefined ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: false } : {}),
  });
  const tokens = new ProviderTokenVerifier(options.providerKey);
  server.on('session', (session) => {
    if ((session.socket as TLSSocket).authorized) allowStreams(session);
  });
  server.on('stream', (stream, headers) => {
    void serveStream(stream, headers, tokens, ctx);
  });
  server.on('sessionError', (err) => ctx.logger.debug({ err }, 'apns session error'));
  return server;
}

/** The provider tokens each connection has sent (TooManyProviderTokenUpdates is per connection). */
const sessionTokens = new WeakMap<http2.Http2Session, ConnectionTokens>();

function tokensOf(session: http2.Http2Session): ConnectionTokens {
  let tokens = sessionTokens.get(session);
  if (tokens === undefined) sessionTokens.set(session, (tokens = new ConnectionTokens()));
  return tokens;
}

/** The topic of each connection's trusted client certificate, read once per connection. */
const certificateTopics = new WeakMap<TLSSocket, string | undefined>();

function clientCertificateTopic(socket: TLSSocket): string | undefined {
  if (!certificateTopics.has(socket)) certificateTopics.set(socket, certificateTopic(socket.getPeerCertificate().subject));
  return certificateTopics.get(socket);
}

async function serveStream(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  tokens: ProviderTokenVerifier,
  ctx: SandboxContext,
): Promise<void> {
  try {
    const body = await readBody(stream);
    const session = stream.session;
    const socket = session?.socket as TLSSocket | undefined;
    const authorized = socket?.authorized === true;
    const request = {
      method: String(headers[':method'] ?? ''),
      path: String(headers[':path'] ?? ''),
      headers,
      body,
      clientCertificateAuthorized: authorized,
      ...(authorized && socket !== undefined && { clientCertificateTopic: clientCertificateTopic(socket) }),
      ...(session !== undefined && { connectionTokens: tokensOf(session), onValidToken: () => allowStreams(session) }),
    };
    const handled = await handleApnsRequest(request, tokens, ctx);
    const { answer } = handled;
    const clientClosed = stream.destroyed || stream.closed;
    if (!clientClosed) {
      // No new streams on this connection; this one (the last) is still answered. Apple: "The
      // GOAWAY frame includes JSON data in its payload with a reason key".
      if (handled.goaway !== undefined) stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id, Buffer.from(JSON.stringify({ reason: handled.goaway })));
      stream.respond({ ':status': answer.status, ...answer.headers });
      stream.end(answer.body.length > 0 ? answer.body : undefined);
    }
    recordExchange(ctx, { ...handled, platform: 'apns', path: request.path, headers, body, clientClosed });
  } catch (err) {
    ctx.logger.warn({ err }, 'apns stream failed');
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  }
}
