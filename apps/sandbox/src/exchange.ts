import type { Logger } from '@herald/logging';
import { maskToken } from '@herald/logging';
import type { FaultPlatform, FaultTable } from './faults.ts';
import type { RecordStore } from './record-store.ts';
import type { CredentialRegistry } from './credential-registry.ts';
import type { Headers } from './apns-validation.ts';

/** What a protocol handler answers. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Shared state of one running sandbox. */
export interface SandboxContext {
  faults: FaultTable;
  records: RecordStore;
  logger: Logger;
  /** APNs keys and FCM projects minted at run time (POST /credentials). */
  credentials?: CredentialRegistry;
}

export interface Exchange {
  platform: FaultPlatform;
  path: string;
  token: string | undefined;
  headers: Headers;
  body: Buffer;
  answer: Answer;
  clientClosed: boolean;
}

export const json = (status: number, value: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/json; charset=UTF-8', ...headers },
  body: JSON.stringify(value),
});

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Request headers without HTTP/2 pseudo-headers, arrays joined as HTTP/1.1 would. */
export function plainHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Record the exchange (rejections too) and log it at info with the token masked. */
export function recordExchange(ctx: SandboxContext, x: Exchange): void {
  const record = ctx.records.add({
    platform: x.platform,
    receivedAt: new Date().toISOString(),
    path: x.path,
    token: x.token,
    headers: plainHeaders(x.headers),
    rawBody: x.body.toString('utf8'),
    status: x.answer.status,
    responseHeaders: x.answer.headers,
    rawResponse: x.answer.body,
    clientClosed: x.clientClosed,
  });
  const path = x.token === undefined ? x.path : x.path.replace(x.token, maskToken(x.token));
  ctx.logger.info(
    { platform: x.platform, seq: record.seq, path, device: maskToken(x.token), status: x.answer.status, bytes: x.body.length, clientClosed: x.clientClosed },
    `${x.platform} request answered ${x.answer.status}`,
  );
}
