import type { DevicePush, PushContent } from '@herald/contracts';
import { mergeJson, put, type Json } from './merge-json.ts';
import { webTopic, webTtlSeconds, webUrgency, type WebPushRequest } from './web-rules.ts';

/**
 * The JSON Herald encrypts for the browser: the service worker's `push` event reads it with
 * `event.data.json()` (documented in apps/web-pusher/README.md and PROVIDER-RULES.md "Web Push").
 * Names follow the Notifications API where one exists (`showNotification(title, { body, tag,
 * icon, image, data })`); `url` is where a click should go.
 */
export interface WebPushPayload {
  title?: string;
  /** Notifications have no subtitle: the page may show it above the body. */
  subtitle?: string;
  body?: string;
  /** Notification tag: `content.tag`, else the job's collapseKey (a newer notification replaces the shown one). */
  tag?: string;
  icon?: string;
  image?: string;
  /** `content.clickAction`: the page to open on a click. */
  url?: string;
  /** `content.badge`: the app badge count (`navigator.setAppBadge`). */
  badgeCount?: number;
  /** Localized text for the page to resolve (Web Push has no localization of its own). */
  loc?: { titleKey?: string; titleArgs?: string[]; key?: string; args?: string[] };
  data?: Record<string, string>;
  /** A background push: nothing to show (browsers may still show a default notification). */
  silent?: true;
  jobId: string;
  pushId: string;
  /** When Herald sent it (ISO 8601). */
  sentAt: string;
}

function locOf(c: PushContent): Json | undefined {
  const loc: Json = {};
  put(loc, 'titleKey', c.titleLocKey);
  put(loc, 'titleArgs', c.titleLocArgs);
  put(loc, 'key', c.locKey);
  put(loc, 'args', c.locArgs);
  return Object.keys(loc).length > 0 ? loc : undefined;
}

/** The push has text a browser's notification can show (title, subtitle, body or a loc key). */
export const webShowsText = (c: PushContent): boolean => c.title !== undefined || c.body !== undefined || c.subtitle !== undefined || locOf(c) !== undefined;

/** The payload object for one push, `content.web.payload` merged last. */
export function buildWebPayload(push: DevicePush, now: Date): Json {
  const c = push.content;
  const p: Json = {};
  put(p, 'title', c.title);
  put(p, 'subtitle', c.subtitle);
  put(p, 'body', c.body);
  put(p, 'tag', c.tag ?? push.collapseKey);
  put(p, 'icon', c.icon);
  put(p, 'image', c.imageUrl);
  put(p, 'url', c.clickAction);
  put(p, 'badgeCount', c.badge);
  put(p, 'loc', locOf(c));
  put(p, 'data', c.data);
  if (!webShowsText(c)) p['silent'] = true;
  Object.assign(p, { jobId: push.jobId, pushId: push.pushId, sentAt: now.toISOString() });
  return c.web?.payload === undefined ? p : mergeJson(p, c.web.payload);
}

/** Everything about one Web Push request except the subscription and the VAPID signature. */
export function buildWebRequest(push: DevicePush, now: Date = new Date()): WebPushRequest {
  return webRequestOf(push, buildWebPayload(push, now), now);
}

/** buildWebRequest's request of the payload built for it (buildWebPayload), kept by a caller that may stamp it again (webRequestFromNow). */
export function webRequestOf(push: DevicePush, payload: Json, now: Date): WebPushRequest {
  const topic = webTopic(push);
  return {
    plaintext: JSON.stringify(payload),
    ttl: webTtlSeconds(push, now),
    urgency: webUrgency(push),
    ...(topic !== undefined && { topic }),
  };
}

/**
 * A request made a while ago (before a wait for budget) with its TTL and sentAt counted from `now`
 * again, in place. sentAt is inside the JSON the browser gets, so its payload (webRequestOf's) is
 * serialised again, not built again. A sentAt content.web.payload sets or removes stands, as
 * buildWebPayload merges it last.
 */
export function webRequestFromNow(request: WebPushRequest, payload: Json, push: DevicePush, now: Date): void {
  request.ttl = webTtlSeconds(push, now);
  if (push.content.web?.payload?.['sentAt'] !== undefined) return;
  payload['sentAt'] = now.toISOString();
  request.plaintext = JSON.stringify(payload);
}
