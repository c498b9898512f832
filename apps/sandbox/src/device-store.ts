import { DeliveryLog, type Delivery, type DeliveryQuery, type DeliveryView } from './delivery-log.ts';
import type { FaultPlatform } from './faults.ts';
import { apnsRetention, fcmRetention, type DeviceOs, type Retention } from './offline-retention.ts';
import { DEFAULT_MAX_RECORDS } from './record-store.ts';

/** A push the provider accepted (answered 200) for a device token. */
export interface AcceptedPush {
  platform: FaultPlatform;
  token: string;
  recordSeq: number;
  receivedAtMs: number;
  headers: Record<string, string>;
  rawBody: string;
}

export type Outcome = 'delivered' | 'stored' | 'discarded';

interface StoredPush {
  push: AcceptedPush;
  untilMs: number;
  slot: string | undefined;
}

interface OfflineDevice {
  os: DeviceOs;
  stored: StoredPush[];
}

const keyOf = (platform: string, token: string): string => `${platform}\u0000${token}`;

function retentionOf(push: AcceptedPush, os: DeviceOs): Retention {
  if (push.platform === 'apns') return apnsRetention(push.headers, push.receivedAtMs);
  let body: unknown;
  try {
    body = JSON.parse(push.rawBody);
  } catch {
    body = undefined;
  }
  return fcmRetention(body, os, push.receivedAtMs);
}

/**
 * Simulated phones. Every token is online unless marked offline: an accepted push reaches an
 * online phone at once; for an offline one it is kept only as the provider would keep it
 * (offline-retention.ts) and handed over, if still unexpired, when the phone comes back.
 */
export class DeviceStore {
  private offline = new Map<string, OfflineDevice>();
  private log: DeliveryLog;

  constructor(capacity = DEFAULT_MAX_RECORDS, private readonly now: () => number = Date.now) {
    this.log = new DeliveryLog(capacity);
  }

  /** Mark a token offline (again: keeps what is stored; `os` matters for FCM only). */
  goOffline(platform: FaultPlatform, token: string, os: DeviceOs = platform === 'apns' ? 'ios' : 'android'): void {
    const device = this.offline.get(keyOf(platform, token));
    if (device !== undefined) device.os = os;
    else this.offline.set(keyOf(platform, token), { os, stored: [] });
  }

  /** Bring a token online and deliver what is stored and unexpired; returns those deliveries. */
  goOnline(platform: FaultPlatform, token: string): Delivery[] {
    const device = this.offline.get(keyOf(platform, token));
    this.offline.delete(keyOf(platform, token));
    const nowMs = this.now();
    const due = (device?.stored ?? []).filter((s) => s.untilMs > nowMs).sort((a, b) => a.push.recordSeq - b.push.recordSeq);
    return due.map((s) => this.deliver(s.push, 'stored', nowMs));
  }

  isOnline(platform: FaultPlatform, token: string): boolean {
    return !this.offline.has(keyOf(platform, token));
  }

  /** An accepted push: delivered now, stored for later, or discarded as the provider would. */
  accept(push: AcceptedPush): Outcome {
    const device = this.offline.get(keyOf(push.platform, push.token));
    if (device === undefined) {
      this.deliver(push, 'direct', push.receivedAtMs);
      return 'delivered';
    }
    const retention = retentionOf(push, device.os);
    if (!retention.stored) return 'discarded';
    if (retention.slot !== undefined) device.stored = device.stored.filter((s) => s.slot !== retention.slot);
    device.stored.push({ push, untilMs: retention.untilMs, slot: retention.slot });
    return 'stored';
  }

  deliveries(q: DeliveryQuery = {}): DeliveryView[] {
    return this.log.query(q);
  }

  /** Every token online again, nothing stored, no deliveries. */
  clear(): void {
    this.offline.clear();
    this.log.clear();
  }

  private deliver(push: AcceptedPush, via: Delivery['via'], atMs: number): Delivery {
    return this.log.add({
      platform: push.platform,
      token: push.token,
      recordSeq: push.recordSeq,
      receivedAt: new Date(push.receivedAtMs).toISOString(),
      deliveredAt: new Date(atMs).toISOString(),
      via,
      headers: push.headers,
      rawBody: push.rawBody,
    });
  }
}
