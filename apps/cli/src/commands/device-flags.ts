import { PushSubscriptionJson, subscriptionFields, type WebPushKeys } from '@herald/contracts';

/** `herald register` / `unregister` device flags: a token, or for a browser its subscription. */
export interface DeviceFlags {
  platform?: string;
  token?: string;
  endpoint?: string;
  p256dh?: string;
  auth?: string;
  subscription?: string;
  applicationServerKey?: string;
}

export interface DeviceFields {
  token: string;
  keys?: WebPushKeys;
  applicationServerKey?: string;
}

/** The subscription flag's JSON (PushSubscription.toJSON()), or an error naming the flag and the field. */
function parseSubscription(raw: string): { token: string; keys: WebPushKeys } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new Error(`--subscription must be the JSON of PushSubscription.toJSON(): ${(err as Error).message}`, { cause: err });
  }
  const parsed = PushSubscriptionJson.safeParse(json);
  if (!parsed.success) throw new Error(`--subscription: ${parsed.error.issues.map((i) => `${['subscription', ...i.path].join('.')}: ${i.message}`).join('; ')}`);
  return subscriptionFields(parsed.data);
}

/**
 * The token (and for web the keys) a register gives: --token for APNs and FCM; for web either
 * --subscription '<PushSubscription JSON>' or --endpoint with --p256dh and --auth. The contract
 * then checks every field (the client library refuses a bad one, naming it).
 */
export function deviceFieldsFromFlags(o: DeviceFlags, kind: 'register' | 'unregister'): DeviceFields {
  const web = o.platform === 'web';
  const asKey = o.applicationServerKey !== undefined ? { applicationServerKey: o.applicationServerKey } : {};
  if (!web) {
    const webOnly = (['endpoint', 'p256dh', 'auth', 'subscription', 'applicationServerKey'] as const).filter((f) => o[f] !== undefined);
    if (webOnly.length > 0) throw new Error(`--${webOnly.map(kebab).join(', --')} belong to --platform web`);
    if (o.token === undefined) throw new Error('--token is required');
    return { token: o.token };
  }
  if (o.subscription !== undefined) {
    if (o.token !== undefined || o.endpoint !== undefined || o.p256dh !== undefined || o.auth !== undefined) {
      throw new Error('give --subscription, or --endpoint with --p256dh and --auth, not both');
    }
    const fields = parseSubscription(o.subscription);
    return kind === 'register' ? { ...fields, ...asKey } : { token: fields.token };
  }
  const token = o.endpoint ?? o.token;
  if (token === undefined) throw new Error('--platform web needs --subscription, or --endpoint (with --p256dh and --auth to register)');
  if (kind === 'unregister') return { token };
  if (o.p256dh === undefined || o.auth === undefined) throw new Error('--platform web registers with --p256dh and --auth (the subscription keys), or --subscription');
  return { token, keys: { p256dh: o.p256dh, auth: o.auth }, ...asKey };
}

const kebab = (s: string): string => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
