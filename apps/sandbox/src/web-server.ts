import http2 from 'node:http2';
import type { SandboxContext } from './exchange.ts';
import { plainHeaders } from './exchange.ts';
import { readBody } from './read-body.ts';
import { handleWebRequest } from './web-handler.ts';
import type { WebPushStore } from './web-store.ts';

export interface WebServerOptions {
  cert: string;
  key: string;
  store: WebPushStore;
}

/** A TLS server speaking the Web Push protocol (RFC 8030 §5) over HTTP/2 and HTTP/1.1, as browsers' push services do. */
export function createWebPushServer(options: WebServerOptions, ctx: SandboxContext): http2.Http2SecureServer {
  const server = http2.createSecureServer({ cert: options.cert, key: options.key, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } });
  server.on('request', (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    void serve(req, res, options, ctx);
  });
  server.on('sessionError', (err) => ctx.logger.debug({ err }, 'web push session error'));
  return server;
}

async function serve(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, options: WebServerOptions, ctx: SandboxContext): Promise<void> {
  try {
    const body = await readBody(req);
    const authority = req.headers[':authority'] ?? req.headers.host ?? '';
    const handled = await handleWebRequest({ method: req.method, path: req.url, headers: req.headers, body, origin: `https://${authority}` }, options.store, ctx);
    const { answer } = handled;
    const clientClosed = res.destroyed || req.socket.destroyed;
    if (!clientClosed) {
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    }
    const record = ctx.records.add({
      platform: 'web',
      receivedAt: new Date().toISOString(),
      path: req.url,
      token: handled.endpoint,
      headers: plainHeaders(req.headers),
      // The decrypted JSON of an accepted push (the encrypted body is of no use to a reader).
      rawBody: handled.plaintext,
      status: answer.status,
      responseHeaders: answer.headers,
      rawResponse: answer.body,
      clientClosed,
      warnings: handled.warnings,
    });
    ctx.logger.info({ platform: 'web', seq: record.seq, status: answer.status, bytes: body.length, clientClosed }, `web request answered ${answer.status}`);
  } catch (err) {
    ctx.logger.warn({ err }, 'web push request failed');
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
}
