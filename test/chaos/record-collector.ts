import type { Platform } from '@herald/contracts';
import type { Sandbox } from '@herald/sandbox';
import { recordsAfter } from '../support/sandbox-client.ts';

/** What the reconciliation needs of one request the sandbox answered. */
export interface Observed {
  platform: Platform;
  token: string;
  jobId: string | undefined;
  status: number;
  at: number;
  /** The client had gone (killed, timed out) before the sandbox could answer. */
  clientClosed: boolean;
}

interface RawRecord {
  seq: number;
  platform: Platform;
  receivedAt: string;
  token?: string;
  body: unknown;
  status: number;
  clientClosed?: boolean;
}

/** The job id the chaos jobs carry in their data: top level for APNs, message.data for FCM. */
function jobIdOf(r: RawRecord): string | undefined {
  const body = (r.body ?? {}) as { jobId?: unknown; message?: { data?: { jobId?: unknown } } };
  const id = r.platform === 'apns' ? body.jobId : body.message?.data?.jobId;
  return typeof id === 'string' ? id : undefined;
}

/** Reads the sandbox's records as they arrive (by sequence number), keeping a compact copy. */
export class RecordCollector {
  readonly records: Observed[] = [];
  private after = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly sandbox: Sandbox) {}

  async poll(): Promise<void> {
    // A gap (requests the sandbox dropped before they were read) would read as lost pushes, and could hide a duplicate: recordsAfter throws.
    for (const r of await recordsAfter<RawRecord>(this.sandbox, this.after)) {
      this.after = Math.max(this.after, r.seq);
      if (r.token === undefined) continue;
      this.records.push({ platform: r.platform, token: r.token, jobId: jobIdOf(r), status: r.status, at: Date.parse(r.receivedAt), clientClosed: r.clientClosed === true });
    }
  }

  start(intervalMs = 500): void {
    const tick = (): void => {
      this.polling = this.poll().finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, intervalMs);
      });
    };
    this.timer = setTimeout(tick, intervalMs);
  }

  /** Stop polling, then read what is left. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling.catch(() => undefined);
    await this.poll();
  }

  lastAt(): number {
    return this.records.at(-1)?.at ?? 0;
  }
}
