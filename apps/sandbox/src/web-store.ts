import { randomBytes, type ECDH } from 'node:crypto';
import { newSubscriptionKeys } from './web-ece.ts';
import type { VapidClaims, WebPushService } from './web-vapid.ts';

/** A simulated browser's push subscription: what `PushSubscription.toJSON()` gives, and its secrets. */
export interface WebSubscription {
  id: string;
  endpoint: string;
  ecdh: ECDH;
  auth: Buffer;
  /** The applicationServerKey it was created with (then only that key's signatures are accepted). */
  applicationServerKey?: string;
  /** Whose push service it plays: its answers to a refused VAPID JWT (web-vapid.ts `asService`). */
  service: WebPushService;
  /** Unsubscribed: the push service answers 410 Gone. */
  gone: boolean;
  createdAt: string;
}

export interface SubscriptionJson {
  endpoint: string;
  expirationTime: null;
  keys: { p256dh: string; auth: string };
}

/** One Web Push message the sandbox accepted (201), decrypted. */
export interface WebPushReceived {
  seq: number;
  endpoint: string;
  subscriptionId: string;
  receivedAt: string;
  /** The decrypted body as JSON when it parses, else the text. */
  payload: unknown;
  plaintextBytes: number;
  bodyBytes: number;
  ttl: number;
  urgency: string;
  topic?: string;
  claims: VapidClaims;
  vapidKey: string;
}

const DEFAULT_CAP = 100_000;

/** Subscriptions and received pushes, both bounded (the oldest go first), so a long bench cannot grow memory without end. */
export class WebPushStore {
  private readonly subscriptions = new Map<string, WebSubscription>();
  private received: WebPushReceived[] = [];
  private seq = 0;
  /** Set once the web push server listens: `https://host:port/wp/`. */
  endpointBase = '';

  constructor(private readonly cap = DEFAULT_CAP) {}

  subscribe(applicationServerKey?: string, service: WebPushService = 'generic'): SubscriptionJson {
    const id = randomBytes(16).toString('base64url');
    const sub: WebSubscription = {
      id,
      endpoint: `${this.endpointBase}${id}`,
      ecdh: newSubscriptionKeys(),
      auth: randomBytes(16),
      ...(applicationServerKey !== undefined && { applicationServerKey }),
      service,
      gone: false,
      createdAt: new Date().toISOString(),
    };
    if (this.subscriptions.size >= this.cap) {
      const oldest = this.subscriptions.keys().next().value;
      if (oldest !== undefined) this.subscriptions.delete(oldest);
    }
    this.subscriptions.set(id, sub);
    return { endpoint: sub.endpoint, expirationTime: null, keys: { p256dh: sub.ecdh.getPublicKey().toString('base64url'), auth: sub.auth.toString('base64url') } };
  }

  get(id: string): WebSubscription | undefined {
    return this.subscriptions.get(id);
  }

  byEndpoint(endpoint: string): WebSubscription | undefined {
    const id = endpoint.slice(endpoint.lastIndexOf('/') + 1);
    const sub = this.subscriptions.get(id);
    return sub?.endpoint === endpoint ? sub : undefined;
  }

  /** The browser unsubscribed: pushes to it are answered 410 from now on. */
  unsubscribe(endpoint: string): boolean {
    const sub = this.byEndpoint(endpoint);
    if (sub === undefined) return false;
    sub.gone = true;
    return true;
  }

  record(push: Omit<WebPushReceived, 'seq'>): WebPushReceived {
    const full = { ...push, seq: ++this.seq };
    this.received.push(full);
    if (this.received.length > this.cap) this.received.splice(0, this.received.length - this.cap);
    return full;
  }

  /** Oldest first; only one subscription's when `endpoint` is given. */
  pushes(endpoint?: string): WebPushReceived[] {
    return endpoint === undefined ? [...this.received] : this.received.filter((p) => p.endpoint === endpoint);
  }

  clearPushes(): void {
    this.received = [];
  }
}
