import type { DevicePush, PushContent } from '@herald/contracts';

export type ApnsPushType = 'alert' | 'background';

/** The parts of an APNs request, before they become header strings. */
export interface ApnsRequestParts {
  topic: string;
  pushType: ApnsPushType;
  priority: 5 | 10;
  /** Epoch seconds; 0 means "deliver once or not at all". */
  expiration: number;
  collapseId: string | undefined;
  apnsId: string;
  payload: Record<string, unknown>;
}

const hasAlert = (c: PushContent): boolean => c.title !== undefined || c.subtitle !== undefined || c.body !== undefined;

/** A content-available push with nothing to show is a background push. */
export const isBackgroundPush = (c: PushContent): boolean => c.contentAvailable === true && !hasAlert(c);

function alertOf(c: PushContent): Record<string, string> | undefined {
  if (!hasAlert(c)) return undefined;
  const alert: Record<string, string> = {};
  if (c.title !== undefined) alert['title'] = c.title;
  if (c.subtitle !== undefined) alert['subtitle'] = c.subtitle;
  if (c.body !== undefined) alert['body'] = c.body;
  return alert;
}

/** The `aps` dictionary. Background pushes carry no alert, badge or sound, as Apple asks. */
export function apsOf(c: PushContent): Record<string, unknown> {
  const aps: Record<string, unknown> = {};
  const background = isBackgroundPush(c);
  const alert = alertOf(c);
  if (alert !== undefined) aps['alert'] = alert;
  if (!background && c.badge !== undefined) aps['badge'] = c.badge;
  if (!background && c.sound !== undefined) aps['sound'] = c.sound;
  if (c.threadId !== undefined) aps['thread-id'] = c.threadId;
  if (c.contentAvailable === true) aps['content-available'] = 1;
  if (c.imageUrl !== undefined && !background) aps['mutable-content'] = 1;
  return aps;
}

/** The JSON body: custom data at top level, `image-url` for a notification service extension, then `aps`. */
export function apnsPayloadOf(c: PushContent): Record<string, unknown> {
  const payload: Record<string, unknown> = { ...(c.data ?? {}) };
  if (c.imageUrl !== undefined) payload['image-url'] = c.imageUrl;
  payload['aps'] = apsOf(c);
  return payload;
}

export function apnsRequestParts(push: DevicePush, topic: string): ApnsRequestParts {
  const background = isBackgroundPush(push.content);
  return {
    topic,
    pushType: background ? 'background' : 'alert',
    priority: background || push.priority === 'normal' ? 5 : 10,
    expiration: push.expiresAt === undefined ? 0 : Math.floor(Date.parse(push.expiresAt) / 1000),
    collapseId: push.collapseKey,
    apnsId: push.pushId,
    payload: apnsPayloadOf(push.content),
  };
}

/** Exactly what goes on the wire to APNs: header strings and the JSON payload. */
export function buildApnsNotification(push: DevicePush, topic: string): { headers: Record<string, string>; payload: object } {
  const p = apnsRequestParts(push, topic);
  const headers: Record<string, string> = {
    'apns-topic': p.topic,
    'apns-push-type': p.pushType,
    'apns-priority': String(p.priority),
    'apns-expiration': String(p.expiration),
    'apns-id': p.apnsId,
  };
  if (p.collapseId !== undefined) headers['apns-collapse-id'] = p.collapseId;
  return { headers, payload: p.payload };
}
