import type { DevicePush } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { Provider, ProviderOptions, ResponseFailure } from '@parse/node-apn';
import { apnsRequestParts } from './apns-notification.ts';
import { classifyApnsFailure } from './apns-classify.ts';
import type { PushProvider, SendResult, SendTarget } from './push-provider.ts';
import type { ApnsSettings } from './settings.ts';

type ApnModule = typeof import('@parse/node-apn');

/** node-apn's failure object; `status` and `response` are absent for transport errors. */
interface NodeApnFailure {
  status?: number | string;
  response?: { reason?: string; timestamp?: number };
  error?: { message?: string };
}

function providerOptions(s: ApnsSettings): ProviderOptions {
  const auth: ProviderOptions =
    s.auth.kind === 'token'
      ? { token: { key: s.auth.key, keyId: s.auth.keyId, teamId: s.auth.teamId } }
      : { cert: s.auth.cert, key: s.auth.key, ...(s.auth.passphrase !== undefined ? { passphrase: s.auth.passphrase } : {}) };
  return {
    ...auth,
    address: s.address,
    port: s.port,
    production: s.production,
    ...(s.ca !== undefined ? { ca: [s.ca] } : {}),
    requestTimeout: s.requestTimeoutMs,
    // Herald retries through its own queues (with back-off and the shared limiter), not inside the client.
    connectionRetryLimit: 0,
  };
}

function toFailureResult(failure: NodeApnFailure): SendResult {
  const status = typeof failure.status === 'number' ? failure.status : undefined;
  const reason = failure.response?.reason ?? (status !== undefined ? failure.error?.message : undefined);
  return classifyApnsFailure({
    ...(status !== undefined ? { status } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(failure.response?.timestamp !== undefined ? { timestamp: failure.response.timestamp } : {}),
    transportError: failure.error?.message ?? String(failure.status ?? 'unknown'),
  });
}

function buildNote(apn: ApnModule, push: DevicePush, topic: string): InstanceType<ApnModule['Notification']> {
  const parts = apnsRequestParts(push, topic);
  const note = new apn.Notification();
  note.rawPayload = parts.payload;
  note.topic = parts.topic;
  note.pushType = parts.pushType;
  note.priority = parts.priority;
  note.expiry = parts.expiration;
  note.id = parts.apnsId;
  if (parts.collapseId !== undefined) note.collapseId = parts.collapseId;
  return note;
}

async function sendOne(apn: ApnModule, provider: Provider, push: DevicePush, topic: string): Promise<SendResult> {
  const result = await provider.send(buildNote(apn, push, topic), push.token);
  const sent = result.sent[0] as { 'apns-unique-id'?: string; 'apns-id'?: string } | undefined;
  if (sent !== undefined) {
    const id = sent['apns-unique-id'] ?? sent['apns-id'];
    return { kind: 'delivered', ...(id !== undefined ? { providerMessageId: id } : {}) };
  }
  const failure = result.failed[0] as (ResponseFailure & NodeApnFailure) | undefined;
  return failure === undefined ? { kind: 'transient', reason: 'APNs client returned no result' } : toFailureResult(failure);
}

/**
 * APNs through @parse/node-apn (token or certificate auth). All sends share one HTTP/2 session,
 * so concurrent `send` calls are multiplexed as concurrent streams.
 */
export async function createApnsProvider(settings: ApnsSettings, logger: Logger): Promise<PushProvider> {
  const imported = (await import('@parse/node-apn')) as ApnModule & { default?: ApnModule };
  const apn = imported.default ?? imported;
  const provider = new apn.Provider(providerOptions(settings));
  const log = logger.child({ provider: 'apns' });
  return {
    platform: 'apns',
    async send(push: DevicePush, target: SendTarget): Promise<SendResult> {
      const topic = target.apnsTopic ?? settings.defaultTopic;
      if (topic === undefined) return { kind: 'permanent', reason: 'no APNs topic for this app' };
      try {
        return await sendOne(apn, provider, push, topic);
      } catch (err) {
        log.warn({ err, pushId: push.pushId }, 'apns send threw');
        return { kind: 'transient', reason: `transport: ${(err as Error).message}` };
      }
    },
    // node-apn's Provider.shutdown returns nothing; its callback fires once the session is closed.
    close: () => new Promise<void>((resolve) => void provider.shutdown(() => resolve())),
  };
}
