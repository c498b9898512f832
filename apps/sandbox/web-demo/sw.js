// Herald Web Push demo: the service worker. Shows each push as a notification and tells the
// open demo pages, so their list updates. Payload: the JSON Herald's web-pusher sends
// (libs/providers/src/web-payload.ts, apps/web-pusher/README.md): title, subtitle, body, tag,
// icon, image, url, badgeCount, data, silent, jobId, pushId, sentAt.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

/** The push's JSON; a payload that is not JSON is shown as its text. */
function readPayload(data) {
  if (data === null) return { title: 'Herald', body: '(a push without a payload)' };
  try {
    const value = data.json();
    return typeof value === 'object' && value !== null ? value : { title: 'Herald', body: String(value) };
  } catch {
    return { title: 'Herald', body: data.text() };
  }
}

async function onPush(data) {
  const payload = readPayload(data);
  const title = typeof payload.title === 'string' && payload.title !== '' ? payload.title : 'Herald';
  // Every push shows a notification, a background one (`silent`: nothing to show) too: Safari
  // revokes the push permission of a service worker that shows none, and Chrome shows its own
  // "site updated in the background" notice (Herald sends a data-only job to browsers only when
  // it carries content.web).
  const body = payload.silent === true ? 'Updated in the background' : [payload.subtitle, payload.body].filter(Boolean).join('\n');
  await self.registration.showNotification(title, {
    body,
    tag: payload.tag,
    icon: payload.icon,
    image: payload.image,
    data: { data: payload.data, url: payload.url, jobId: payload.jobId, pushId: payload.pushId },
  });
  if (typeof payload.badgeCount === 'number' && 'setAppBadge' in navigator) await navigator.setAppBadge(payload.badgeCount).catch(() => undefined);
  const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const page of pages) page.postMessage({ kind: 'push', payload, receivedAt: new Date().toISOString() });
}

self.addEventListener('push', (event) => event.waitUntil(onPush(event.data)));

/** A click opens the push's url (or focuses a window already showing it). */
async function onClick(notification) {
  notification.close();
  const url = notification.data?.url;
  if (typeof url !== 'string' || url === '') return;
  const target = new URL(url, self.location.href).href;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((w) => w.url === target);
  if (open !== undefined) await open.focus();
  else await self.clients.openWindow(target);
}

self.addEventListener('notificationclick', (event) => event.waitUntil(onClick(event.notification)));
