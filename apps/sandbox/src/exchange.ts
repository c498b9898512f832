import type { Logger } from '@herald/logging';
import { maskToken } from '@herald/logging';
import type { FaultPlatform, FaultTable } from './faults.ts';
import type { RecordStore } from './record-store.ts';
import type { CredentialRegistry } from './credential-registry.ts';
import type { Headers } from './apns-request.ts';
import type { DeviceStore } from './device-store.ts';
import type { WebPushStore } from './web-store.ts';
import type { PauseLog } from './pause-log.ts';

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
  /** Simulated phones: online/offline, what each received (`/devices/...`). */
  devices: DeviceStore;
  /** Simulated browsers' push subscriptions and the Web Push messages they received (`/web/...`). */
  web?: WebPushStore;
  /** The sandbox's own pauses (`GET /pauses`). */
  pauses?: PauseLog;
}

/** A protocol handler's verdict on one request. */
export interface Handled {
  token: string | undefined;
  answer: Answer;
  /** Accepted but not as Apple or Google advise, or breaking a rule they give no answer for (kept on the record). */
  warnings: string[];
  /** The provider accepted a real send (not validate_only): the phone gets it or it is stored. */
  deliver: boolean;
  /**
   * Close the connection with this answer (an APNs `goaway` fault): GOAWAY first, its debug data
   * `{"reason": goaway}` as Apple documents it, then the answer.
   */
  goaway?: string;
}

export interface Exchange extends Handled {
  platform: FaultPlatform;
  path: string;
  headers: Headers;
  body: Buffer;
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

/**
 * Record the exchange (rejections too), hand an accepted push to the simulated phone (even when
 * the client hung up: the provider had accepted it), and log it at info with the token masked.
 */
export function recordExchange(ctx: SandboxContext, x: Exchange): void {
  const receivedAtMs = Date.now();
  const headers = plainHeaders(x.headers);
  const rawBody = x.body.toString('utf8');
  const record = ctx.records.add({
    platform: x.platform,
    receivedAt: new Date(receivedAtMs).toISOString(),
    path: x.path,
    token: x.token,
    headers,
    rawBody,
    status: x.answer.status,
    responseHeaders: x.answer.headers,
    rawResponse: x.answer.body,
    clientClosed: x.clientClosed,
    warnings: x.warnings,
  });
  if (x.deliver && x.token !== undefined) {
    ctx.devices.accept({ platform: x.platform, token: x.token, recordSeq: record.seq, receivedAtMs, headers, rawBody });
  }
  const path = x.token === undefined ? x.path : x.path.replace(x.token, maskToken(x.token));
  ctx.logger.info(
    { platform: x.platform, seq: record.seq, path, device: maskToken(x.token), status: x.answer.status, bytes: x.body.length, clientClosed: x.clientClosed },
    `${x.platform} request answered ${x.answer.status}`,
  );
}
