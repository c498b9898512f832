import type { DevicePush, PushContent } from '@herald/contracts';
import { isBackgroundPush } from './apns-notification.ts';

/**
 * The subset of firebase-admin's `Message` Herald sends (camelCase, android.ttl in milliseconds).
 * firebase-admin renames it to the v1 wire shape: collapse_key, ttl "3600s", image,
 * content-available, mutable-content, thread-id, notification_count.
 */
export interface FcmMessage {
  token: string;
  notification?: { title?: string; body?: string; imageUrl?: string };
  data?: Record<string, string>;
  android: {
    priority: 'high' | 'normal';
    ttl?: number;
    collapseKey?: string;
    notification?: { sound?: string; notificationCount?: number };
  };
  apns: {
    headers: Record<string, string>;
    payload: { aps: { badge?: number; sound?: string; threadId?: string; contentAvailable?: boolean; mutableContent?: boolean } };
  };
}

function notificationOf(c: PushContent): FcmMessage['notification'] {
  if (c.title === undefined && c.body === undefined && c.imageUrl === undefined) return undefined;
  return {
    ...(c.title !== undefined ? { title: c.title } : {}),
    ...(c.body !== undefined ? { body: c.body } : {}),
    ...(c.imageUrl !== undefined ? { imageUrl: c.imageUrl } : {}),
  };
}

function androidOf(push: DevicePush, now: Date): FcmMessage['android'] {
  const c = push.content;
  const android: FcmMessage['android'] = { priority: push.priority === 'high' ? 'high' : 'normal' };
  if (push.expiresAt !== undefined) android.ttl = Math.max(0, Math.floor((Date.parse(push.expiresAt) - now.getTime()) / 1000)) * 1000;
  if (push.collapseKey !== undefined) android.collapseKey = push.collapseKey;
  if (c.sound !== undefined || c.badge !== undefined) {
    android.notification = {
      ...(c.sound !== undefined ? { sound: c.sound } : {}),
      ...(c.badge !== undefined ? { notificationCount: c.badge } : {}),
    };
  }
  return android;
}

function apnsOf(push: DevicePush): FcmMessage['apns'] {
  const c = push.content;
  const background = isBackgroundPush(c);
  const headers: Record<string, string> = {
    'apns-priority': background || push.priority === 'normal' ? '5' : '10',
    'apns-push-type': background ? 'background' : 'alert',
  };
  if (push.expiresAt !== undefined) headers['apns-expiration'] = String(Math.floor(Date.parse(push.expiresAt) / 1000));
  if (push.collapseKey !== undefined) headers['apns-collapse-id'] = push.collapseKey;
  const aps: FcmMessage['apns']['payload']['aps'] = {};
  if (!background && c.badge !== undefined) aps.badge = c.badge;
  if (!background && c.sound !== undefined) aps.sound = c.sound;
  if (c.threadId !== undefined) aps.threadId = c.threadId;
  if (c.contentAvailable === true) aps.contentAvailable = true;
  if (c.imageUrl !== undefined && !background) aps.mutableContent = true;
  return { headers, payload: { aps } };
}

/** The firebase-admin Message for one device push. `now` fixes android.ttl (time left until expiresAt). */
export function buildFcmMessage(push: DevicePush, now: Date = new Date()): FcmMessage {
  const notification = notificationOf(push.content);
  return {
    token: push.token,
    ...(notification !== undefined ? { notification } : {}),
    ...(push.content.data !== undefined ? { data: push.content.data } : {}),
    android: androidOf(push, now),
    apns: apnsOf(push),
  };
}
