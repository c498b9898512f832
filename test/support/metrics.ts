import type { ServiceProcess } from './service-process.ts';

/** Base URL of a running service's ops server (/metrics, /healthz, /readyz), from its start-up log line. */
export function opsUrl(service: ServiceProcess): string {
  const started = service.logs.findLast((l) => typeof l['opsPort'] === 'number');
  if (started === undefined) throw new Error(`${service.name} has not logged its ops port`);
  return `http://127.0.0.1:${String(started['opsPort'])}`;
}

/** Read one Prometheus sample from a running service's /metrics (summing series that match). */
export async function metric(service: ServiceProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${opsUrl(service)}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const series = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => series[k] === v)) total += Number(m[3]);
  }
  return total;
}
