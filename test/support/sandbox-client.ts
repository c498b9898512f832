import type { Pause, Sandbox } from '@herald/sandbox';

export interface SandboxRecord {
  seq: number;
  platform: 'apns' | 'fcm' | 'web';
  receivedAt: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  status: number;
  response: unknown;
  /** Accepted, but breaking a rule the provider documents no error for (Apple's background and Live Activity aps rules) or not as Apple or Google advise. */
  warnings: string[];
}

/** One push a simulated phone received (`GET /devices/deliveries`). */
export interface PhoneDelivery {
  seq: number;
  platform: 'apns' | 'fcm';
  token: string;
  /** The seq of the request record that carried it. */
  recordSeq: number;
  receivedAt: string;
  deliveredAt: string;
  /**
   * `direct`: the phone was online; `stored`: the provider kept it until the phone came back;
   * `deleted-messages`: FCM's notice that it discarded what it kept (over 100 non-collapsible messages).
   */
  via: 'direct' | 'stored' | 'deleted-messages';
  /** The provider's rule that brought it. */
  why: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface PhoneSpec {
  platform: 'apns' | 'fcm';
  token: string;
  /** FCM only: an iOS phone follows apns-expiration, an Android one (default) android.ttl. */
  os?: 'android' | 'ios';
}

/** A sandbox, in this process or another: where its control API answers. */
export interface SandboxControl {
  settings: { control: { url: string } };
}

/** `GET /records` of the sandbox's control API with these query parameters. */
async function fetchRecords<T>(sandbox: SandboxControl, params: Record<string, string>): Promise<T[]> {
  const res = await fetch(`${sandbox.settings.control.url}/records?${new URLSearchParams(params)}`);
  if (!res.ok) throw new Error(`sandbox records: ${res.status}`);
  return (await res.json()) as T[];
}

/** Read what the sandbox received, through its control API (as an operator would). */
export async function sandboxRecords(sandbox: Sandbox, query: { platform?: string; token?: string } = {}): Promise<SandboxRecord[]> {
  return fetchRecords<SandboxRecord>(sandbox, { limit: '100000', ...query });
}

/**
 * The requests the sandbox answered after `after` (by seq), oldest first, each with only `fields`
 * when given: for a reader that follows every push as it arrives. The sandbox keeps only its most
 * recent requests (SANDBOX_MAX_RECORDS), so once reading (`after` > 0; 0 reads from the oldest it
 * keeps) this throws if some after `after` were dropped before they were read: a count of lost or
 * duplicate pushes is never short without saying so.
 */
export async function recordsAfter<T extends { seq: number }>(sandbox: SandboxControl, after: number, fields?: readonly string[]): Promise<T[]> {
  const records = await fetchRecords<T>(sandbox, { after: String(after), ...(fields !== undefined && { fields: fields.join(',') }) });
  const first = records[0]?.seq;
  if (after > 0 && first !== undefined && first !== after + 1) {
    throw new Error(`the sandbox no longer keeps requests ${after + 1}–${first - 1} (it keeps its most recent SANDBOX_MAX_RECORDS): the reader fell behind`);
  }
  return records;
}

/** Records the provider accepted (status 200). */
export async function delivered(sandbox: Sandbox, query: { platform?: string; token?: string } = {}): Promise<SandboxRecord[]> {
  return (await sandboxRecords(sandbox, query)).filter((r) => r.status === 200);
}

/** The sandbox's own pauses (`GET /pauses`): spans in which its receive times cannot be trusted. */
export async function sandboxPauses(sandbox: Sandbox): Promise<Pause[]> {
  const res = await fetch(`${sandbox.settings.control.url}/pauses`);
  if (!res.ok) throw new Error(`sandbox pauses: ${res.status}`);
  return ((await res.json()) as { pauses: Pause[] }).pauses;
}

export async function injectFault(sandbox: SandboxControl, fault: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${sandbox.settings.control.url}/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  if (!res.ok) throw new Error(`sandbox fault: ${res.status} ${await res.text()}`);
}

/** Every injected fault taken away: the providers answer as they normally do again. */
export async function clearFaults(sandbox: SandboxControl): Promise<void> {
  const res = await fetch(`${sandbox.settings.control.url}/faults`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`sandbox faults: ${res.status} ${await res.text()}`);
}

async function control(sandbox: Sandbox, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${sandbox.settings.control.url}${path}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`sandbox ${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Take a phone offline: accepted pushes are kept only as Apple / Google would store them. */
export async function setPhoneOffline(sandbox: Sandbox, phone: PhoneSpec): Promise<void> {
  await control(sandbox, 'POST', '/devices/offline', phone);
}

/** Bring a phone back online; returns how many stored, unexpired pushes it then received. */
export async function setPhoneOnline(sandbox: Sandbox, phone: Omit<PhoneSpec, 'os'>): Promise<number> {
  return ((await control(sandbox, 'POST', '/devices/online', phone)) as { delivered: number }).delivered;
}

/** What the phone with this token received, oldest first. */
export async function phoneDeliveries(sandbox: Sandbox, phone: Omit<PhoneSpec, 'os'>): Promise<PhoneDelivery[]> {
  const params = new URLSearchParams({ platform: phone.platform, token: phone.token });
  return (await control(sandbox, 'GET', `/devices/deliveries?${params}`)) as PhoneDelivery[];
}

/** Every phone online again, nothing stored, no deliveries. */
export async function resetPhones(sandbox: Sandbox): Promise<void> {
  await control(sandbox, 'DELETE', '/devices');
}

/** A simulated browser's push subscription, as `PushSubscription.toJSON()` gives it. */
export interface WebSubscriptionJson {
  endpoint: string;
  expirationTime: null;
  keys: { p256dh: string; auth: string };
}

/** One Web Push message the sandbox's push service accepted (201) and decrypted. */
export interface WebPushReceived {
  seq: number;
  endpoint: string;
  receivedAt: string;
  /** The decrypted payload (JSON). */
  payload: Record<string, unknown>;
  plaintextBytes: number;
  bodyBytes: number;
  ttl: number;
  urgency: string;
  topic?: string;
  /** The VAPID JWT's claims and the key that signed it. */
  claims: { aud: string; exp: number; sub?: string };
  vapidKey: string;
}

/**
 * Subscribe a simulated browser (optionally bound to an application server key, as pushManager.subscribe
 * does); `service: 'apple'` for Safari's push service's answers.
 */
export async function createWebSubscription(sandbox: Sandbox, options: { applicationServerKey?: string; service?: 'generic' | 'apple' } = {}): Promise<WebSubscriptionJson> {
  return (await control(sandbox, 'POST', '/web/subscriptions', options)) as WebSubscriptionJson;
}

/** The browser unsubscribed: its push service answers 410 Gone from now on. */
export async function unsubscribeWeb(sandbox: Sandbox, endpoint: string): Promise<void> {
  await control(sandbox, 'DELETE', `/web/subscriptions?${new URLSearchParams({ endpoint })}`);
}

/** What the sandbox's push service accepted, oldest first (one subscription's when `endpoint` is given). */
export async function webPushes(sandbox: Sandbox, endpoint?: string): Promise<WebPushReceived[]> {
  const query = endpoint === undefined ? '' : `?${new URLSearchParams({ endpoint })}`;
  return (await control(sandbox, 'GET', `/web/pushes${query}`)) as WebPushReceived[];
}

/** Make the push service answer with an error: for one subscription (`endpoint`) or all. */
export async function injectWebFault(
  sandbox: Sandbox,
  fault: { endpoint?: string; error: 'NotFound' | 'Gone' | 'PayloadTooLarge' | 'TooManyRequests' | 'InternalServerError'; times?: number; retryAfterSeconds?: number },
): Promise<void> {
  const { endpoint, ...rest } = fault;
  await injectFault(sandbox, { platform: 'web', ...(endpoint !== undefined && { token: endpoint }), ...rest });
}
