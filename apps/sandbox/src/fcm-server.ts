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
function acceptLenientScheme(server: http2.Http2SecureServer, ctx: SandboxContext): void {
  const [connectionListener] = server.listeners('secureConnection') as ConnectionListener[];
  if (connectionListener === undefined) throw new Error('http2 secure server without its connection listener');
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') {
      sniffScheme(socket, (s, filtered) => {
        ctx.records.countFcmConnection(filtered);
        connectionListener.call(server, s);
      });
    }
    else connectionListener.call(server, socket);
  });
}

/**
 * A TLS server speaking the FCM HTTP v1 send API over HTTP/2 and HTTP/1.1 (`allowHTTP1`). HTTP/2
 * streams are served directly (as the APNs server does), not through Node's compatibility
 * request/response objects, which cost about a third of the server's time a request; HTTP/1.1
 * requests still arrive as 'request' events.
 */
export function createFcmServer(options: FcmServerOptions, ctx: SandboxContext): http2.Http2SecureServer {
  const server = http2.createSecureServer({ cert: options.cert, key: options.key, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } });
  acceptLenientScheme(server, ctx);
  server.on('request', (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    void serve({ method: req.method, path: req.url, headers: req.headers, read: () => readBody(req), closed: () => res.destroyed || req.socket.destroyed }, respondOver(res), options, ctx);
  });
  // Listening for 'request' made Node wrap every HTTP/2 stream in those objects: serve the streams instead.
  server.removeAllListeners('stream');
  server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    const incoming = { method: String(headers[':method'] ?? ''), path: String(headers[':path'] ?? ''), headers, read: () => readBody(stream), closed: () => stream.destroyed || stream.closed };
    void serve(incoming, respondOn(stream), options, ctx);
  });
  server.on('sessionError', (err) => ctx.logger.debug({ err }, 'fcm session error'));
  return server;
}

interface Incoming {
  method: string;
  path: string;
  headers: http2.IncomingHttpHeaders;
  read(): Promise<Buffer>;
  /** Whether the client went away before the answer. */
  closed(): boolean;
}

interface Responder {
  answer(status: number, headers: Record<string, string>, body: Buffer | string): void;
  fail(): void;
}

const respondOn = (stream: http2.ServerHttp2Stream): Responder => ({
  answer(status, headers, body) {
    stream.respond({ ':status': status, ...headers });
    // The body, then the end once it is written: Node 20 builds an ERR_STREAM_DESTROYED for a
    // write that completes after its stream closed (nothing reads it), which `end(body)` always
    // is; that cost about 6% of the sandbox's FCM time.
    if (body.length === 0) stream.end();
    else stream.write(body, () => stream.destroyed || stream.end());
  },
  fail() {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  },
});

const respondOver = (res: http2.Http2ServerResponse): Responder => ({
  answer(status, headers, body) {
    res.writeHead(status, headers);
    res.end(body);
  },
  fail() {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  },
});

async function serve(req: Incoming, respond: Responder, options: FcmServerOptions, ctx: SandboxContext): Promise<void> {
  try {
    const body = await req.read();
    const request = { method: req.method, path: req.path, headers: req.headers, body };
    const handled = await handleFcmRequest(request, options, ctx);
    const { answer } = handled;
    const clientClosed = req.closed();
    if (!clientClosed) respond.answer(answer.status, answer.headers, answer.body);
    recordExchange(ctx, { ...handled, platform: 'fcm', path: request.path, headers: req.headers, body, clientClosed });
  } catch (err) {
    ctx.logger.warn({ err }, 'fcm request failed');
    respond.fail();
  }
}
