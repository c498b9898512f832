import { opsUrl } from './metrics.ts';
import type { ServiceProcess } from './service-process.ts';

/** Base URL of a running monitor's dashboard and API (its ops port, from its start-up log line). */
export function monitorUrl(monitor: ServiceProcess): string {
  return opsUrl(monitor);
}

export interface StatusAlarm {
  alarm: string;
  queue: string;
  summary: string;
}

export interface MonitorStatus {
  vhost: string;
  queues: Array<{ name: string; messages: number; consumers: number }>;
  alarms: StatusAlarm[];
}

/** The monitor's /api/status, with an operator key (the monitor's /api needs one). */
export async function monitorStatus(monitor: ServiceProcess, operatorKey: string): Promise<MonitorStatus> {
  const res = await fetch(`${monitorUrl(monitor)}/api/status`, { headers: { authorization: `Bearer ${operatorKey}` } });
  if (!res.ok) throw new Error(`monitor /api/status: ${res.status}`);
  return (await res.json()) as MonitorStatus;
}

/** Seconds between two instants, one decimal, for the test output. */
export const secondsBetween = (from: number, to: number): number => Math.round((to - from) / 100) / 10;
