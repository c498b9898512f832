/**
 * CPU of the shared servers' processes that work for one system: RabbitMQ and PostgreSQL are shared
 * with whatever else runs on the machine, so summing every `beam.smp` or `postgres` process (proc.ts
 * cpuMsOf) counts other people's work, and goes negative when one of their processes exits. Here a
 * PostgreSQL backend counts when its client port is one of our processes' sockets, and beam.smp when
 * it listens on the broker port we use. Read from Linux's /proc only.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { clientPortInTitle, cpuMs, listenerOf, localPortsOf } from './proc.ts';

/** The process holding a listening socket on `port` (e.g. beam.smp on 5672), as a list (empty if none). */
export function listenerPids(port: number): number[] {
  const pid = listenerOf(port);
  return pid === undefined ? [] : [pid];
}

/**
 * PostgreSQL's processes under the server on `pgPort`, found cheaply enough to ask each second while
 * a round runs. Finding the server by its listening socket reads every process's file descriptors
 * (20–35 ms of CPU on this machine), and so does finding which client ports are ours: asked afresh
 * each second, that was 5–10% of a core taken from the system under test. So the server is found
 * once, its children are read from /proc/<pid>/task/<tid>/children, a backend's client port from its
 * title when it first appears (a backend serves one connection), and the clients' ports again only
 * when a backend appears whose port is not among them (once for each such backend).
 */
export class PostgresProcesses {
  private root: number | undefined;
  /** Backend or server process → its client's port (undefined: one of the server's own processes). */
  private readonly clientPortOf = new Map<number, number | undefined>();
  private clientPorts = new Set<number>();
  /** Backends found to serve another client (asked once each). */
  private readonly others = new Set<number>();

  constructor(private readonly pgPort = 5432) {}

  /** PostgreSQL's own processes (postmaster, WAL writer, checkpointer, …): not a client's backend. */
  server(): number[] {
    const root = this.serverPid();
    return root === undefined ? [] : [root, ...this.children(root).filter((pid) => this.portOf(pid) === undefined)];
  }

  /** Backends serving connections that `clients` opened to the server. */
  backendsOf(clients: () => readonly number[]): number[] {
    const root = this.serverPid();
    if (root === undefined) return [];
    const backends = this.children(root).flatMap((pid) => {
      const port = this.portOf(pid);
      return port === undefined ? [] : [{ pid, port }];
    });
    const unknown = backends.filter((b) => !this.clientPorts.has(b.port) && !this.others.has(b.pid));
    if (unknown.length > 0) {
      this.clientPorts = localPortsOf(clients());
      for (const b of unknown) if (!this.clientPorts.has(b.port)) this.others.add(b.pid);
    }
    return backends.filter((b) => this.clientPorts.has(b.port)).map((b) => b.pid);
  }

  private serverPid(): number | undefined {
    if (this.root === undefined || !existsSync(`/proc/${this.root}`)) {
      this.root = listenerOf(this.pgPort);
      this.clientPortOf.clear();
      this.others.clear();
    }
    return this.root;
  }

  private children(pid: number): number[] {
    const out: number[] = [];
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (child !== '') out.push(Number(child));
      }
    } catch {
      // gone meanwhile
    }
    return out;
  }

  /**
   * Kept once the process has its own title ("postgres: 15/main: user db 127.0.0.1(54321) idle", or
   * "postgres: 15/main: checkpointer"); a backend forked a moment ago still shows the server's
   * command line, so it is asked again at the next sample.
   */
  private portOf(pid: number): number | undefined {
    if (!this.clientPortOf.has(pid)) {
      let title: string;
      try {
        title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return undefined; // exited meanwhile
      }
      if (!title.startsWith('postgres:')) return undefined;
      this.clientPortOf.set(pid, clientPortInTitle(title));
    }
    return this.clientPortOf.get(pid);
  }
}

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
