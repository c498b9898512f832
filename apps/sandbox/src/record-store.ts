import type { FaultPlatform } from './faults.ts';

/** One request the sandbox received, with what it answered. */
export interface RequestRecord {
  seq: number;
  platform: FaultPlatform;
  receivedAt: string;
  path: string;
  /** The device token the request was for, when there was one. */
  token: string | undefined;
  headers: Record<string, string>;
  /** The request body exactly as received (UTF-8). */
  rawBody: string;
  status: number;
  responseHeaders: Record<string, string>;
  /** The response body as sent, or '' for none. */
  rawResponse: string;
  /** The client had gone (timed out, reset) before the answer could be sent. */
  clientClosed: boolean;
  /** Accepted but not as Apple or Google advise, or why it was refused (empty when nothing to say). */
  warnings: string[];
}

export interface RecordView extends Omit<RequestRecord, 'rawResponse'> {
  body: unknown;
  response: unknown;
}

/** The fields a record view can be cut down to (`GET /records?fields=`). */
export const RECORD_FIELDS = ['seq', 'platform', 'receivedAt', 'path', 'token', 'headers', 'rawBody', 'body', 'status', 'responseHeaders', 'response', 'clientClosed', 'warnings'] as const;
export type RecordField = (typeof RECORD_FIELDS)[number];

export interface RecordQuery {
  platform?: string;
  token?: string;
  limit?: number;
  afterSeq?: number;
}

export interface Stats {
  total: number;
  byPlatform: Record<string, { total: number; byStatus: Record<string, number> }>;
  /** HTTP/2 connections to the FCM server: served as they are, or through the `:scheme` filter (lenient-scheme.ts), which costs the sandbox more a request. */
  fcmConnections: { direct: number; filtered: number };
  /**
   * Requests the provider would take and then mishandle (answered 2xx with warnings: a background
   * push that wakes nothing, an alert that shows nothing), counted however long the sandbox runs,
   * with the first few, so a test or an operator sees them after the records have rotated. A
   * refused request's warnings (the web push service's reason beside its answer) are not counted:
   * its sender sees the refusal.
   */
  warned: { total: number; first: Array<Pick<RequestRecord, 'seq' | 'platform' | 'path' | 'warnings'>> };
}

/** How many warned requests `Stats.warned.first` keeps. */
const FIRST_WARNED = 10;

const noStats = (): Stats => ({ total: 0, byPlatform: {}, fcmConnections: { direct: 0, filtered: 0 }, warned: { total: 0, first: [] } });

const parseOr = (raw: string): unknown => {
  if (raw.length === 0) return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
};

/** One field of a record's view: `body` and `response` are parsed only when asked for. */
function fieldOf(r: RequestRecord, f: RecordField): unknown {
  if (f === 'body') return parseOr(r.rawBody);
  if (f === 'response') return parseOr(r.rawResponse);
  return r[f];
}

/**
 * How many recent requests (and deliveries) the sandbox keeps by default. A record and its delivery
 * hold the raw request and answer: about 9 kB of heap a push (100,000 kept took the sandbox to 1.1 GB
 * after 240,000 pushes; 1,000 kept, 180 MB after 90,000). The default keeps a window a poller reading
 * `GET /records?after=` every second cannot outrun at bench rates; the counters (`GET /stats`) stay
 * exact however long it runs.
 */
export const DEFAULT_MAX_RECORDS = 20_000;

/** A caller of `counted`: woken once `atLeast` requests (of `status`, if given) have been counted. */
interface CountWaiter {
  status: number | undefined;
  atLeast: number;
  wake: () => void;
}

/** A bounded ring of recent records plus unbounded counters. */
export class RecordStore {
  private ring: RequestRecord[] = [];
  private head = 0;
  private seq = 0;
  private stats: Stats = noStats();
  private waiters: CountWaiter[] = [];

  constructor(private readonly capacity = DEFAULT_MAX_RECORDS) {}

  add(record: Omit<RequestRecord, 'seq'>): RequestRecord {
    const full: RequestRecord = { ...record, seq: ++this.seq };
    if (this.ring.length < this.capacity) this.ring.push(full);
    else {
      this.ring[this.head] = full;
      this.head = (this.head + 1) % this.capacity;
    }
    this.count(full);
    return full;
  }

  private count(r: RequestRecord): void {
    this.stats.total += 1;
    const p = (this.stats.byPlatform[r.platform] ??= { total: 0, byStatus: {} });
    p.total += 1;
    p.byStatus[String(r.status)] = (p.byStatus[String(r.status)] ?? 0) + 1;
    if (r.warnings.length > 0 && r.status < 300) {
      this.stats.warned.total += 1;
      if (this.stats.warned.first.length < FIRST_WARNED) this.stats.warned.first.push({ seq: r.seq, platform: r.platform, path: r.path, warnings: r.warnings });
    }
    if (this.waiters.length > 0) this.wakeCounted();
  }

  /** The counters `GET /stats/stream` sends: every request, and by status, every platform together. */
  counts(): { total: number; byStatus: Record<string, number> } {
    const byStatus: Record<string, number> = {};
    for (const p of Object.values(this.stats.byPlatform)) for (const [status, n] of Object.entries(p.byStatus)) byStatus[status] = (byStatus[status] ?? 0) + n;
    return { total: this.stats.total, byStatus };
  }

  /** Requests counted so far, every platform together: of `status` if given, else all. */
  countOf(status?: number): number {
    return status === undefined ? this.stats.total : (this.counts().byStatus[String(status)] ?? 0);
  }

  /**
   * Resolves with countOf(status) once it reaches `atLeast`, or when `timeoutMs` has passed
   * (whatever it is then): one request that answers when the count is reached, for a caller
   * that would otherwise poll `GET /stats` (each poll costs the poller and the sandbox a wake-up).
   */
  counted(atLeast: number, timeoutMs: number, status?: number): Promise<number> {
    if (this.countOf(status) >= atLeast) return Promise.resolve(this.countOf(status));
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve(this.countOf(status));
      };
      const waiter: CountWaiter = { status, atLeast, wake };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(this.countOf(status));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private wakeCounted(): void {
    const reached = this.waiters.filter((w) => this.countOf(w.status) >= w.atLeast);
    if (reached.length === 0) return;
    this.waiters = this.waiters.filter((w) => !reached.includes(w));
    reached.forEach((w) => w.wake());
  }

  /** Oldest first; `limit` keeps the most recent matches. */
  query(q: RecordQuery = {}): RecordView[] {
    return this.matching(q).map(({ rawResponse, ...r }) => ({ ...r, body: parseOr(r.rawBody), response: parseOr(rawResponse) }));
  }

  /** The same records with only `fields` of each: for a poller that reads every push (the bench's feed), which needs a few. */
  queryFields(q: RecordQuery, fields: readonly RecordField[]): Array<Partial<RecordView>> {
    return this.matching(q).map((r) => Object.fromEntries(fields.map((f) => [f, fieldOf(r, f)])) as Partial<RecordView>);
  }

  private matching(q: RecordQuery): RequestRecord[] {
    const matches = this.newerThan(q.afterSeq ?? 0).filter(
      (r) => (q.platform === undefined || r.platform === q.platform) && (q.token === undefined || r.token === q.token),
    );
    return q.limit === undefined ? matches : matches.slice(Math.max(0, matches.length - q.limit));
  }

  /**
   * The kept records whose seq is above `after`, oldest first. Seqs are consecutive and the ring
   * keeps the newest, so they are its last `seq − after` entries: a poller reading every second
   * copies what is new, not the whole ring.
   */
  private newerThan(after: number): RequestRecord[] {
    const n = Math.min(this.ring.length, Math.max(0, this.seq - after));
    if (n === 0) return [];
    const ordered = this.ring.length < this.capacity ? this.ring : [...this.ring.slice(this.head), ...this.ring.slice(0, this.head)];
    return ordered.slice(ordered.length - n);
  }

  countFcmConnection(filtered: boolean): void {
    this.stats.fcmConnections[filtered ? 'filtered' : 'direct'] += 1;
  }

  getStats(): Stats {
    return structuredClone(this.stats);
  }

  /** Forget records and counters, but not the warned requests (a test's end still sees them). */
  clear(): void {
    this.ring = [];
    this.head = 0;
    this.stats = { ...noStats(), warned: this.stats.warned };
  }
}
