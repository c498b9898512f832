import http2 from 'node:http2';
import { recordExchange, type SandboxContext } from './exchange.ts';
import { handleFcmRequest, type FcmExpectations } from './fcm-handler.ts';
import { readBody } from './read-body.ts';

export interface FcmServerOptions extends FcmExpectations {
  cert: string;
  key: string;
}

/** A TLS server speaking the FCM HTTP v1 send API over HTTP/2 and HTTP/1.1 (`allowHTTP1`). */
export function createFcmServer(options: FcmServerOptions, ctx: SandboxContext): http2.Http2SecureServer {
  const server = http2.createSecureServer({ cert: options.cert, key: options.key, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } });
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
