import { APNS_IMAGE_URL_KEY, effectivePushType, pushAsOf, type DevicePush, type PushContent, type PushType } from '@herald/contracts';
import { apnsTopicFor, HERALD_MAX_STORAGE_S } from './apns-rules.ts';
import { copyOf, mergeJson, put, type Json } from './merge-json.ts';

/** The parts of an APNs request, before they become header strings. */
export interface ApnsRequestParts {
  topic: string;
  /** Apple's apns-push-type: Herald's own types, or another one set through `content.apns.headers`. */
  pushType: string;
  priority: 1 | 5 | 10;
  /** Epoch seconds; 0 means "deliver once or not at all". */
  expiration: number;
  collapseId: string | undefined;
  apnsId: string;
  payload: Record<string, unknown>;
}

/**
 * An APNs alert's apns-collapse-id (directly and through FCM): the job's collapse key, else the
 * push's own id. With its own id, a push sent again after its
 * first attempt got no answer (a timeout, a lost connection: the provider may have delivered it)
 * replaces itself instead of showing twice (Apple: notifications with the same collapse identifier
 * "are displayed to the user as a single notification"), and distinct pushes never merge. Only an
 * alert: nothing else is shown. A header, so it costs none of the payload's 4 KB; Android's tag
 * and a browser's would (FCM's 4 KB, Web Push's 3,993 bytes), and take only the collapse key.
 */
export const collapseIdOf = (push: Pick<DevicePush, 'collapseKey' | 'pushId'>, pushType: string): string | undefined =>
  headerValue(push.collapseKey) ?? (pushType === 'alert' ? push.pushId : undefined);

/**
 * A header value as HTTP/2 allows it: without whitespace first or last (RFC 9113 §8.2.1: such a
 * request is malformed; Apple may ignore the header or reset the stream, retried then parked).
 * Nothing left: no header. A collapse key "news " (taken at the doors, stored and queued as given)
 * goes out as "news".
 */
export function headerValue(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** A content-available push with nothing to show is a background push. */
export const isBackgroundPush = (c: PushContent): boolean => effectivePushType(c) === 'background';


function alertOf(c: PushContent): Json | undefined {
  const alert: Json = {};
  put(alert, 'title', c.title);
  put(alert, 'subtitle', c.subtitle);
  put(alert, 'body', c.body);
  put(alert, 'title-loc-key', c.titleLocKey);
  put(alert, 'title-loc-args', c.titleLocArgs);
  put(alert, 'loc-key', c.locKey);
  put(alert, 'loc-args', c.locArgs);
  return Object.keys(alert).length > 0 ? alert : undefined;
}

/** The push's times a Live Activity's default timestamp is worked out from (pushAsOf), only when it needs one. */
type PushTimes = Pick<DevicePush, 'acceptedAt' | 'dueAt'>;

function liveActivityAps(c: PushContent, aps: Json, push: PushTimes): void {
  const la = c.liveActivity;
  if (la === undefined) return;
  aps['event'] = la.event;
  aps['timestamp'] = la.timestamp ?? Math.floor(pushAsOf(push).getTime() / 1000);
  put(aps, 'content-state', la.contentState);
  put(aps, 'dismissal-date', la.dismissalDate);
  put(aps, 'stale-date', la.staleDate);
  put(aps, 'attributes-type', la.attributesType);
  put(aps, 'attributes', la.attributes);
}

/**
 * aps.sound: the sound file's name, or for a critical alert Apple's sound dictionary. Apple
 * ("Generating a remote notification", sound): "Use this key for regular notifications. For critical
 * alerts, use the sound dictionary instead", `{ critical: 1, name }` (`volume` left to the app's
 * default; content.apns.payload can set one). Without it the alert plays as a regular sound, muted
 * by the ring switch and Focus, on every iOS that reads the flag rather than interruption-level.
 */
function soundOf(c: PushContent): string | Json | undefined {
  if (c.sound === undefined || c.interruptionLevel !== 'critical') return c.sound;
  return { critical: 1, name: c.sound };
}

/**
 * The `aps` dictionary. Background pushes carry no alert, badge or sound, as Apple asks. A Live
 * Activity's timestamp defaults to the push's pushAsOf: when its job was accepted, or when
 * a scheduled push fell due (Apple drops an update older than the one it shows, so a retried older
 * update must keep its older time, and a scheduled one must not carry its acceptance, hours before). `type`: the push type the request
 * goes as (FCM's iOS part takes the typed content's, not content.apns's header override).
 */
export function apsOf(c: PushContent, push: PushTimes, type: PushType = effectivePushType(c)): Json {
  const background = type === 'background';
  const aps: Json = {};
  // A Live Activity's alert carries its sound (Apple's ActivityKit push payload: title, body, sound).
  const soundInAlert = type === 'liveactivity' && c.sound !== undefined;
  put(aps, 'alert', soundInAlert ? { ...alertOf(c), sound: c.sound } : alertOf(c));
  if (!background) {
    put(aps, 'badge', c.badge);
    if (!soundInAlert) put(aps, 'sound', soundOf(c));
  }
  if (background || c.contentAvailable === true) aps['content-available'] = 1;
  // Apple: a background notification's aps "includes only the content-available key"; the keys
  // that arrange what is shown go with what is shown.
  if (background) return aps;
  put(aps, 'thread-id', c.threadId);
  put(aps, 'category', c.actionCategory);
  if (c.mutableContent === true || c.imageUrl !== undefined) aps['mutable-content'] = 1;
  put(aps, 'interruption-level', c.interruptionLevel);
  put(aps, 'relevance-score', c.relevanceScore);
  put(aps, 'target-content-id', c.targetContentId);
  if (type === 'liveactivity') liveActivityAps(c, aps, push);
  return aps;
}

/** The JSON body: custom data at top level, `image-url` for a notification service extension, `aps`, then the raw override. */
export function apnsPayloadOf(c: PushContent, push: PushTimes, type: PushType): Json {
  const payload = copyOf(c.data ?? {});
  if (c.imageUrl !== undefined) payload[APNS_IMAGE_URL_KEY] = c.imageUrl;
  payload['aps'] = apsOf(c, push, type);
  return c.apns?.payload === undefined ? payload : mergeJson(payload, c.apns.payload);
}

/**
 * apns-expiration (directly or through FCM): the job's expiry; 0 for a now-or-never push; without
 * an expiry, as long as Herald lets providers keep a push (28 days) — never 0, which Apple reads
 * as "do not store".
 */
export function expirationOf(push: DevicePush, now: Date): number {
  if (push.nowOrNever === true) return 0;
  if (push.expiresAt !== undefined) return Math.floor(Date.parse(push.expiresAt) / 1000);
  return Math.floor(now.getTime() / 1000) + HERALD_MAX_STORAGE_S;
}

/** Priority 10 only where Apple allows it: never for background pushes. */
function priorityOf(push: DevicePush, pushType: string): 5 | 10 {
  return pushType === 'background' || push.priority === 'normal' ? 5 : 10;
}

/** What Herald sends for one push, the `content.apns` override applied last. `bundleId` is the app's topic. */
export function apnsRequestParts(push: DevicePush, bundleId: string, now: Date = new Date()): ApnsRequestParts {
  const headers = push.content.apns?.headers ?? {};
  const pushType = effectivePushType(push.content);
  const override = headers['apns-priority'];
  return {
    topic: apnsTopicFor(bundleId, pushType),
    pushType,
    priority: override !== undefined ? (Number(override) as 1 | 5 | 10) : priorityOf(push, pushType),
    expiration: headers['apns-expiration'] !== undefined ? Number(headers['apns-expiration']) : expirationOf(push, now),
    collapseId: headerValue(headers['apns-collapse-id']) ?? collapseIdOf(push, pushType),
    apnsId: push.pushId,
    payload: apnsPayloadOf(push.content, push, pushType),
  };
}

/** Exactly what goes on the wire to APNs: header strings and the JSON payload. */
export function buildApnsNotification(push: DevicePush, bundleId: string, now: Date = new Date()): { headers: Record<string, string>; payload: object } {
  const p = apnsRequestParts(push, bundleId, now);
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
