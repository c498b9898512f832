// Herald Web Push demo: registers the service worker (sw.js), subscribes on a click, shows the
// PushSubscription a web app would send to Herald, and lists the pushes the worker reports.
'use strict';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
/** How long to wait for the browser's push service before saying so (it may never answer). */
const SUBSCRIBE_TIMEOUT_MS = Number(params.get('subscribeTimeoutMs') ?? '15000');

function base64urlToBytes(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

function setState(name, value, text) {
  document.body.dataset[name] = value;
  if (text !== undefined) $(name === 'subscribe' ? 'status' : name).textContent = text;
}

function showError(message) {
  $('error').textContent = message;
}

function showSubscription(subscription, applicationServerKey) {
  const json = subscription.toJSON();
  $('subscription').textContent = JSON.stringify(json, null, 2);
  $('register-body').textContent = JSON.stringify({ app: params.get('app') ?? 'demo', userId: params.get('userId') ?? 'demo-user', platform: 'web', subscription: json, applicationServerKey }, null, 2);
  for (const id of ['subscription', 'register-hint', 'register-body']) $(id).hidden = false;
}

function addPush({ payload, receivedAt }) {
  $('no-pushes').hidden = true;
  const item = document.createElement('li');
  item.className = 'push';
  item.dataset.pushId = payload.pushId ?? '';
  const title = document.createElement('strong');
  title.className = 'title';
  title.textContent = payload.title ?? '(no title)';
  const body = document.createElement('div');
  body.className = 'body';
  body.textContent = payload.body ?? '';
  const meta = document.createElement('div');
  meta.className = 'meta';
  meta.textContent = [receivedAt, payload.tag && `tag ${payload.tag}`, payload.jobId && `job ${payload.jobId}`, payload.url].filter(Boolean).join(' · ');
  item.append(title, body, meta);
  $('pushes').prepend(item);
}

const timeout = (ms) => new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer from the browser's push service within ${ms / 1000} s`)), ms));

async function subscribe() {
  const key = $('vapid-key').value.trim();
  showError('');
  if (!/^[A-Za-z0-9_-]{80,100}={0,2}$/.test(key)) {
    setState('subscribe', 'failed', 'failed');
    showError('Enter the app\u2019s VAPID public key: 87 base64url characters (a 65-byte P-256 point).');
    return;
  }
  $('subscribe').disabled = true;
  setState('subscribe', 'pending', 'subscribing\u2026');
  try {
    const permission = Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission();
    $('permission').textContent = permission;
    if (permission !== 'granted') throw new Error(`notifications are ${permission}: allow them for this site to subscribe`);
    const registration = await navigator.serviceWorker.ready;
    const options = { userVisibleOnly: true, applicationServerKey: base64urlToBytes(key) };
    const subscription = await Promise.race([registration.pushManager.subscribe(options), timeout(SUBSCRIBE_TIMEOUT_MS)]);
    showSubscription(subscription, key);
    setState('subscribe', 'subscribed', 'subscribed');
  } catch (err) {
    setState('subscribe', 'failed', 'failed');
    showError(`Subscribing failed: ${err.name && err.name !== 'Error' ? `${err.name}: ` : ''}${err.message}`);
  } finally {
    $('subscribe').disabled = false;
  }
}

async function start() {
  $('vapid-key').value = params.get('vapidKey') ?? '';
  $('permission').textContent = 'Notification' in window ? Notification.permission : 'unsupported';
  $('subscribe').addEventListener('click', () => void subscribe());
  if (!('serviceWorker' in navigator) || !('PushManager' in window)) {
    setState('worker', 'unsupported', 'unsupported: this browser (or an insecure origin) has no service workers or Push API');
    $('subscribe').disabled = true;
    return;
  }
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (event.data?.kind === 'push') addPush(event.data);
  });
  try {
    await navigator.serviceWorker.register('sw.js');
    await navigator.serviceWorker.ready;
    setState('worker', 'active', 'active');
    const existing = await (await navigator.serviceWorker.ready).pushManager.getSubscription();
    if (existing !== null) {
      showSubscription(existing, $('vapid-key').value.trim() || undefined);
      setState('subscribe', 'subscribed', 'subscribed (earlier)');
    }
  } catch (err) {
    setState('worker', 'failed', `failed: ${err.message}`);
  }
}

void start();
