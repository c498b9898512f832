/**
 * CPU of the shared servers' processes that work for one system: RabbitMQ and PostgreSQL are shared
 * with whatever else runs on the machine, so summing every `beam.smp` or `postgres` process (proc.ts
 * cpuMsOf) counts other people's work, and goes negative when one of their processes exits. Here a
 * PostgreSQL backend counts when its client port is one of our processes' sockets, and beam.smp when
 * it listens on the broker port we use. Read from Linux's /proc only.
 */
import { cpuMs, listenerOf, localPortsOf, postgresProcesses } from './proc.ts';

/** The process holding a listening socket on `port` (e.g. beam.smp on 5672), as a list (empty if none). */
export function listenerPids(port: number): number[] {
  const pid = listenerOf(port);
  return pid === undefined ? [] : [pid];
}

/** PostgreSQL backends serving connections that `clients` opened to `pgPort` (by the client port in the backend's title). */
export const postgresBackendsOf = (clients: number[], pgPort = 5432): number[] => postgresProcesses(pgPort, localPortsOf(clients)).ours;

/** PostgreSQL's own processes (postmaster, walwriter, checkpointer, …): not a client's backend. */
export const postgresServerPids = (pgPort = 5432): number[] => postgresProcesses(pgPort, new Set()).server;

/**
 * CPU ms of a changing set of processes over a window: sample() while it runs (each second or so);
 * a process first seen after start() counts from 0 (it was born in the window), one that exits
 * between samples keeps what the last sample saw.
 */
export class ProcessSetCpu {
  private base = new Map<number, number>();
  private last = new Map<number, number>();

  constructor(private readonly find: () => number[]) {}

  start(): void {
    this.base.clear();
    this.last.clear();
    for (const pid of this.find()) {
      const ms = safeCpu(pid);
      if (Number.isNaN(ms)) continue;
      this.base.set(pid, ms);
      this.last.set(pid, ms);
    }
  }

  sample(): void {
    for (const pid of this.find()) {
      const ms = safeCpu(pid);
      if (Number.isNaN(ms)) continue;
      if (!this.base.has(pid)) this.base.set(pid, 0);
      this.last.set(pid, ms);
    }
  }

  /** CPU ms spent since start() by the processes seen. */
  spentMs(): number {
    let total = 0;
    for (const [pid, ms] of this.last) total += ms - (this.base.get(pid) ?? 0);
    return total;
  }
}

function safeCpu(pid: number): number {
  try {
    return cpuMs(pid);
  } catch {
    return NaN;
  }
}
