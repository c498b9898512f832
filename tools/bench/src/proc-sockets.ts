/**
 * CPU of the shared servers' processes that work for one system: RabbitMQ and PostgreSQL are shared
 * with whatever else runs on the machine, so summing every `beam.smp` or `postgres` process (proc.ts
 * cpuMsOf) counts other people's work, and goes negative when one of their processes exits. Here a
 * PostgreSQL backend counts when its client port is one of our processes' sockets, and beam.smp when
 * it listens on the broker port we use. Read from Linux's /proc only.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { cpuMs } from './proc.ts';

const TCP_LISTEN = '0A';

interface TcpEntry {
  localPort: number;
  remotePort: number;
  state: string;
  inode: string;
}

function tcpTable(): TcpEntry[] {
  const entries: TcpEntry[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [local, remote, state, inode] = [f[1], f[2], f[3], f[9]];
      if (local === undefined || remote === undefined || state === undefined || inode === undefined) continue;
      const port = (addr: string): number => parseInt(addr.split(':')[1] ?? '0', 16);
      entries.push({ localPort: port(local), remotePort: port(remote), state, inode });
    }
  }
  return entries;
}

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m?.[1] !== undefined) inodes.add(m[1]);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // exited, or not ours to read
  }
  return inodes;
}

const pidsOf = (comm: string): number[] =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm;
      } catch {
        return false;
      }
    });

const cmdline = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
};

/** The `comm` processes holding a listening socket on `port` (e.g. beam.smp on 5672). */
export function listenerPids(comm: string, port: number): number[] {
  const listening = new Set(tcpTable().filter((e) => e.state === TCP_LISTEN && e.localPort === port).map((e) => e.inode));
  return pidsOf(comm).filter((pid) => [...socketInodes(pid)].some((i) => listening.has(i)));
}

/** PostgreSQL backends serving connections that `clients` opened to `pgPort` (by the client port in the backend's title). */
export function postgresBackendsOf(clients: number[], pgPort = 5432): number[] {
  const ours = new Set(clients.flatMap((pid) => [...socketInodes(pid)]));
  const clientPorts = new Set(tcpTable().filter((e) => e.remotePort === pgPort && ours.has(e.inode)).map((e) => e.localPort));
  return pidsOf('postgres').filter((pid) => {
    const port = /\((\d+)\)/.exec(cmdline(pid))?.[1];
    return port !== undefined && clientPorts.has(Number(port));
  });
}

/** PostgreSQL's own processes (postmaster, walwriter, checkpointer, …): not a client's backend. */
export const postgresServerPids = (): number[] => pidsOf('postgres').filter((pid) => !/\(\d+\)/.test(cmdline(pid)));

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
