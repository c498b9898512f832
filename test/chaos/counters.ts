import type { System } from '../support/system.ts';
import { metric } from '../support/metrics.ts';

/** The counters the summary reports, per kind of service. */
const WATCHED: Record<string, Array<{ label: string; name: string; labels?: Record<string, string> }>> = {
  pusher: [
    { label: 'pusher delivered', name: 'herald_pushes_total', labels: { outcome: 'delivered' } },
    { label: 'pusher invalid', name: 'herald_pushes_total', labels: { outcome: 'invalid' } },
    { label: 'pusher expired', name: 'herald_pushes_total', labels: { outcome: 'expired' } },
    { label: 'pusher duplicate (acked unsent)', name: 'herald_pushes_total', labels: { outcome: 'duplicate' } },
  ],
  descheduler: [{ label: 'descheduler expired', name: 'herald_descheduler_pushes_total', labels: { outcome: 'expired' } }],
  demuxer: [
    { label: 'demuxer jobs expired', name: 'herald_demuxer_jobs_total', labels: { outcome: 'expired' } },
    { label: 'demuxer pushes expired before due', name: 'herald_demuxer_scheduled_pushes_total', labels: { outcome: 'expired' } },
  ],
  invalidator: [{ label: 'invalidations applied', name: 'herald_invalidations_total', labels: { result: 'invalidated' } }],
};

const kindOf = (service: string): string => service.replace(/^(apns|fcm)-/, '').replace(/#\d+$/, '');

/**
 * Prometheus counters start at zero in every process, and the chaos suite kills processes. So the
 * counters are read every few seconds and right before each kill, and summed over the processes
 * each service has been: a lower bound (what a process counted after its last read is lost).
 */
export class CounterTotals {
  private readonly last = new Map<string, Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sys: System) {}

  async read(names: readonly string[] = [...this.sys.services.keys()]): Promise<void> {
    await Promise.all(names.map((name) => this.readOne(name).catch(() => undefined)));
  }

  start(intervalMs = 2_000): void {
    this.timer = setInterval(() => void this.read(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  totals(): Map<string, number> {
    const sums = new Map<string, number>();
    for (const values of this.last.values()) for (const [label, v] of values) sums.set(label, (sums.get(label) ?? 0) + v);
    return sums;
  }

  private async readOne(name: string): Promise<void> {
    const service = this.sys.services.get(name);
    const watched = WATCHED[kindOf(name)];
    const port = service?.logs.findLast((l) => typeof l['opsPort'] === 'number')?.['opsPort'];
    if (service === undefined || watched === undefined || port === undefined || !service.running) return;
    const values = new Map<string, number>();
    for (const w of watched) values.set(w.label, await metric(service, w.name, w.labels));
    this.last.set(`${name}@${String(port)}`, values);
  }
}
