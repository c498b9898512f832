import type { FaultPlatform } from './faults.ts';

/** One push a simulated phone received. */
export interface Delivery {
  seq: number;
  platform: FaultPlatform;
  token: string;
  /** The `GET /records` seq of the request that carried it. */
  recordSeq: number;
  /** When the provider accepted it. */
  receivedAt: string;
  /** When the phone got it: at once when online, else when it came back online. */
  deliveredAt: string;
  /**
   * `direct`: online; `stored`: kept by the provider until the phone came back; `deleted-messages`:
   * FCM's notice that it discarded what it kept (recordSeq 0, no headers).
   */
  via: 'direct' | 'stored' | 'deleted-messages';
  /** The provider's rule that brought it (e.g. why a stored push was kept). */
  why: string;
  /** The request headers (shared with the record; `query` leaves out `authorization`). */
  headers: Record<string, string>;
  /** The request body exactly as received (UTF-8). */
  rawBody: string;
}

export interface DeliveryView extends Omit<Delivery, 'rawBody'> {
  body: unknown;
}

/** A push the provider accepted that the phone never got, and the rule that dropped it. */
export interface Discard {
  platform: FaultPlatform;
  token: string;
  recordSeq: number;
  receivedAt: string;
  discardedAt: string;
  why: string;
}

export interface DeliveryQuery {
  platform?: string;
  token?: string;
}

/** What the phone sees of the request headers: not the provider credentials. */
function withoutAuthorization(headers: Record<string, string>): Record<string, string> {
  const copy = { ...headers };
  delete copy['authorization'];
  return copy;
}

const parseOr = (raw: string): unknown => {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
};

/** A bounded ring of the most recent deliveries, oldest first. */
export class DeliveryLog {
  private ring: Delivery[] = [];
  private head = 0;
  private seq = 0;

  constructor(private readonly capacity = 1_000_000) {}

  add(delivery: Omit<Delivery, 'seq'>): Delivery {
    const full: Delivery = { ...delivery, seq: ++this.seq };
    if (this.ring.length < this.capacity) this.ring.push(full);
    else {
      this.ring[this.head] = full;
      this.head = (this.head + 1) % this.capacity;
    }
    return full;
  }

  query(q: DeliveryQuery = {}): DeliveryView[] {
    const ordered = [...this.ring.slice(this.head), ...this.ring.slice(0, this.head)];
    return ordered
      .filter((d) => (q.platform === undefined || d.platform === q.platform) && (q.token === undefined || d.token === q.token))
      .map(({ rawBody, headers, ...d }) => ({ ...d, headers: withoutAuthorization(headers), body: parseOr(rawBody) }));
  }

  clear(): void {
    this.ring = [];
    this.head = 0;
  }
}
