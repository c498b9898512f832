import http2 from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { recordExchange, type SandboxContext } from './exchange.ts';
import { handleFcmRequest, type FcmExpectations } from './fcm-handler.ts';
import { lenientSchemeSocket, sniffScheme } from './lenient-scheme.ts';
import { readBody } from './read-body.ts';

export interface FcmServerOptions extends FcmExpectations {
  cert: string;
  key: string;
}

type ConnectionListener = (this: http2.Http2SecureServer, socket: TLSSocket | ReturnType<typeof lenientSchemeSocket>) => void;

/**
 * Accept what Google accepts: HTTP/2 connections whose first request carries firebase-admin's
 * `:scheme: https:` reach Node's HTTP/2 server through a filter that makes it acceptable, the
 * others as they are (see lenient-scheme.ts); HTTP/1.1 ones as they are.
 */
function acceptLenientScheme(server: http2.Http2SecureServer): void {
  const [connectionListener] = server.listeners('secureConnection') as ConnectionListener[];
  if (connectionListener === undefined) throw new Error('http2 secure server without its connection listener');
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') sniffScheme(socket, (s) => connectionListener.call(server, s));
    else connectionListener.call(server, socket);
  });
}

/** A TLS server speaking the FCM HTTP v1 send API over HTTP/2 and HTTP/1.1 (`allowHTTP1`). */
export function createFcmServer(options: FcmServerOptions, ctx: SandboxContext): http2.Http2SecureServer {
  const server = http2.createSecureServer({ cert: options.cert, key: options.key, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } });
  acceptLenientScheme(server);
  server.on('request', (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    void serve(req, res, options, ctx);
  });
  server.on('sessionError', (err) => ctx.logger.debug({ err }, 'fcm session error'));
  return server;
}

async function serve(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, options: FcmServerOptions, ctx: SandboxContext): Promise<void> {
  try {
    const body = await readBody(req);
    const request = { method: req.method, path: req.url, headers: req.headers, body };
    const handled = await handleFcmRequest(request, options, ctx);
    const { answer } = handled;
    const clientClosed = res.destroyed || req.socket.destroyed;
    if (!clientClosed) {
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    }
    recordExchange(ctx, { ...handled, platform: 'fcm', path: request.path, headers: req.headers, body, clientClosed });
  } catch (err) {
    ctx.logger.warn({ err }, 'fcm request failed');
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
}
