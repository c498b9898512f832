import { DeliveryLog, type Delivery, type DeliveryQuery, type DeliveryView, type Discard } from './delivery-log.ts';
import type { FaultPlatform } from './faults.ts';
import { apnsRetention, fcmRetention, type DeviceOs, type Retention, type StoreLimits } from './offline-retention.ts';
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
  why: string;
}

interface OfflineDevice {
  os: DeviceOs;
  stored: StoredPush[];
  /** FCM discarded what it kept (too many non-collapsible messages): the phone is told when back. */
  owedDeletedNotice: boolean;
}

/** Google: "If you exceed this number, FCM only keeps four collapse keys, with no determining factor on which keys are kept." */
const FIFTH_KEY =
  'a collapse key beyond FCM\'s four per device: one key\'s message dropped (Google names no rule for which; the sandbox drops the oldest)';
/** Google: "If the limit is reached, all stored messages are discarded. When the device is back online, it receives a special message". */
const OVERFLOW = 'FCM\'s limit of 100 non-collapsible messages reached: all stored messages discarded, the phone told when back online';
const DELETED_NOTICE = 'FCM discarded the stored messages (the 100-message limit): the app\'s onDeletedMessages()';

/** The fields a delivery and a discard share. */
const whoAndWhen = (push: AcceptedPush) => ({
  platform: push.platform,
  token: push.token,
  recordSeq: push.recordSeq,
  receivedAt: new Date(push.receivedAtMs).toISOString(),
});

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
  private dropped: Discard[] = [];

  constructor(private readonly capacity = DEFAULT_MAX_RECORDS, private readonly now: () => number = Date.now) {
    this.log = new DeliveryLog(capacity);
  }

  /** Mark a token offline (again: keeps what is stored; `os` matters for FCM only). */
  goOffline(platform: FaultPlatform, token: string, os: DeviceOs = platform === 'apns' ? 'ios' : 'android'): void {
    const device = this.offline.get(keyOf(platform, token));
    if (device !== undefined) device.os = os;
    else this.offline.set(keyOf(platform, token), { os, stored: [], owedDeletedNotice: false });
  }

  /**
   * Bring a token online and deliver what is stored and unexpired (after FCM's deleted-messages
   * notice, if it discarded what it kept); returns the stored pushes delivered.
   */
  goOnline(platform: FaultPlatform, token: string): { pushes: Delivery[]; deletedNotice: boolean } {
    const device = this.offline.get(keyOf(platform, token));
    this.offline.delete(keyOf(platform, token));
    const nowMs = this.now();
    const deletedNotice = device?.owedDeletedNotice ?? false;
    if (deletedNotice) this.log.add(this.notice(platform, token, nowMs));
    const stored = device?.stored ?? [];
    for (const s of stored.filter((s) => s.untilMs <= nowMs)) this.discard(s.push, 'expired while the phone was offline', nowMs);
    const due = stored.filter((s) => s.untilMs > nowMs).sort((a, b) => a.push.recordSeq - b.push.recordSeq);
    return { pushes: due.map((s) => this.deliver(s.push, 'stored', s.why, nowMs)), deletedNotice };
  }

  isOnline(platform: FaultPlatform, token: string): boolean {
    return !this.offline.has(keyOf(platform, token));
  }

  /** An accepted push: delivered now, stored for later, or discarded as the provider would. */
  accept(push: AcceptedPush): Outcome {
    const device = this.offline.get(keyOf(push.platform, push.token));
    if (device === undefined) {
      this.deliver(push, 'direct', 'online: delivered at once', push.receivedAtMs);
      return 'delivered';
    }
    const retention = retentionOf(push, device.os);
    if (!retention.stored) {
      this.discard(push, retention.why, push.receivedAtMs);
      return 'discarded';
    }
    const { slot, limits } = retention;
    if (slot !== undefined) {
      this.keep(device, (s) => s.slot !== slot, `replaced by a newer push: ${retention.why}`, push.receivedAtMs);
      if (limits !== undefined) this.makeRoomForKey(device, limits, push.receivedAtMs);
    } else if (limits !== undefined && device.stored.filter((s) => s.slot === undefined).length >= limits.nonCollapsible) {
      this.keep(device, () => false, OVERFLOW, push.receivedAtMs);
      this.discard(push, OVERFLOW, push.receivedAtMs);
      device.owedDeletedNotice = true;
      return 'discarded';
    }
    device.stored.push({ push, untilMs: retention.untilMs, slot, why: retention.why });
    return 'stored';
  }

  deliveries(q: DeliveryQuery = {}): DeliveryView[] {
    return this.log.query(q);
  }

  /** Accepted pushes the phone will never get, oldest first, with the rule that dropped each. */
  discards(q: DeliveryQuery = {}): Discard[] {
    return this.dropped.filter((d) => (q.platform === undefined || d.platform === q.platform) && (q.token === undefined || d.token === q.token));
  }

  /** Every token online again, nothing stored, no deliveries or discards. */
  clear(): void {
    this.offline.clear();
    this.log.clear();
    this.dropped = [];
  }

  /** A new collapse key while the device already holds `limits.collapseKeys` of them: the oldest key's push goes. */
  private makeRoomForKey(device: OfflineDevice, limits: StoreLimits, atMs: number): void {
    const keyed = device.stored.filter((s) => s.slot !== undefined);
    const oldest = keyed[0];
    if (keyed.length < limits.collapseKeys || oldest === undefined) return;
    this.keep(device, (s) => s !== oldest, FIFTH_KEY, atMs);
  }

  /** Keep the stored pushes that pass `keep`; the others are discarded for `why`. */
  private keep(device: OfflineDevice, keep: (s: StoredPush) => boolean, why: string, atMs: number): void {
    for (const s of device.stored.filter((s) => !keep(s))) this.discard(s.push, why, atMs);
    device.stored = device.stored.filter(keep);
  }

  private discard(push: AcceptedPush, why: string, atMs: number): void {
    if (this.dropped.length >= this.capacity) this.dropped.shift();
    this.dropped.push({ ...whoAndWhen(push), discardedAt: new Date(atMs).toISOString(), why });
  }

  private notice(platform: FaultPlatform, token: string, atMs: number): Omit<Delivery, 'seq'> {
    const at = new Date(atMs).toISOString();
    // The legacy protocol's name for it; the Firebase Android SDK calls onDeletedMessages().
    const rawBody = JSON.stringify({ message_type: 'deleted_messages' });
    return { platform, token, recordSeq: 0, receivedAt: at, deliveredAt: at, via: 'deleted-messages', why: DELETED_NOTICE, headers: {}, rawBody };
  }

  private deliver(push: AcceptedPush, via: Delivery['via'], why: string, atMs: number): Delivery {
    const { headers, rawBody } = push;
    return this.log.add({ ...whoAndWhen(push), deliveredAt: new Date(atMs).toISOString(), via, why, headers, rawBody });
  }
}
