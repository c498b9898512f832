/** What the benchmarks read about processes from Linux's /proc. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { median } from './stats.ts';

/** utime + stime of a process so far, ms (clock ticks of 10 ms); NaN without a pid. */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms used so far by every process whose command name is `comm` (postgres, beam.smp). */
export function cpuMsOf(comm: string): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm) total += cpuMs(Number(pid));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** A process's peak resident set so far (VmHWM), MB; NaN if it cannot be read (gone, no pid). */
export function peakRssMb(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? NaN : Math.round(Number(kb) / 1024);
  } catch {
    return NaN;
  }
}

/** Every process now: pid → parent pid and command name. */
function processTable(): Map<number, { ppid: number; comm: string }> {
  const table = new Map<number, { ppid: number; comm: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      table.set(Number(entry), { ppid, comm: stat.slice(open + 1, close) });
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

/** `root` and every process below it. */
export function processTree(root: number): number[] {
  const table = processTable();
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, p] of table) if (p.ppid === tree[i]) tree.push(pid);
  }
  return tree;
}

/** Socket inodes of TCP sockets in /proc/net/tcp{,6}: inode → local and remote port, and whether it listens. */
function tcpSockets(): Map<string, { local: number; remote: number; listening: boolean }> {
  const sockets = new Map<string, { local: number; remote: number; listening: boolean }>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (addr: string | undefined): number => parseInt(addr?.split(':')[1] ?? '', 16);
      sockets.set(f[9] as string, { local: port(f[1]), remote: port(f[2]), listening: f[3] === '0A' });
    }
  }
  return sockets;
}

function socketInodesOf(pid: number): string[] {
  const inodes: string[] = [];
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.push(m[1] as string);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // gone, or not ours to read
  }
  return inodes;
}

/**
 * The process listening on TCP `port` on this machine (e.g. 5672: the RabbitMQ node the bench uses).
 * A child forked a moment ago still holds its server's listening socket (a PostgreSQL backend before
 * it closes the postmaster's), and once pids wrap (pid_max is 32,768 here) it can have a lower pid
 * than its server: the listener is the holder whose parent holds none.
 */
export function listenerOf(port: number): number | undefined {
  const listening = new Set([...tcpSockets()].filter(([, s]) => s.listening && s.local === port).map(([inode]) => inode));
  if (listening.size === 0) return undefined;
  const holds = (pid: number): boolean => socketInodesOf(pid).some((i) => listening.has(i));
  const table = processTable();
  for (const pid of table.keys()) if (holds(pid)) return serverOfHolder(pid, (p) => table.get(p)?.ppid, holds);
  return undefined;
}

/** From a process holding a listening socket, up through its parents while they hold it too: the server that opened it. */
export function serverOfHolder(holder: number, parentOf: (pid: number) => number | undefined, holds: (pid: number) => boolean): number {
  let server = holder;
  for (let parent = parentOf(server); parent !== undefined && parent > 1 && holds(parent); parent = parentOf(server)) server = parent;
  return server;
}

/** Local TCP ports of the sockets each of `pids` holds (their client ends, as a server sees them). */
export function localPortsByPid(pids: readonly number[]): Map<number, Set<number>> {
  const sockets = tcpSockets();
  const byPid = new Map<number, Set<number>>();
  for (const pid of pids) {
    const ports = new Set<number>();
    for (const inode of socketInodesOf(pid)) {
      const s = sockets.get(inode);
      if (s !== undefined && !s.listening) ports.add(s.local);
    }
    byPid.set(pid, ports);
  }
  return byPid;
}

/** The client port in a PostgreSQL backend's process title ("postgres: 15/main: user db 127.0.0.1(54321) idle"); undefined for the server's own processes. */
export function clientPortInTitle(title: string): number | undefined {
  const client = /\(([0-9]+)\)/.exec(title)?.[1];
  return client === undefined ? undefined : Number(client);
}

/** PostgreSQL backends under the server listening on `port`, by the client port each serves (from its process title). */
export function postgresBackends(port: number): { backends: Map<number, number>; server: number[] } {
  const root = listenerOf(port);
  const out = { backends: new Map<number, number>(), server: [] as number[] };
  if (root === undefined) return out;
  for (const pid of processTree(root)) {
    let title: string;
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    const client = clientPortInTitle(title);
    if (client === undefined) out.server.push(pid);
    else out.backends.set(pid, client);
  }
  return out;
}

/** Local TCP ports of the sockets `pids` hold (their client ends, as a server sees them). */
export function localPortsOf(pids: readonly number[]): Set<number> {
  const sockets = tcpSockets();
  const ports = new Set<number>();
  for (const pid of pids) for (const inode of socketInodesOf(pid)) {
    const s = sockets.get(inode);
    if (s !== undefined && !s.listening) ports.add(s.local);
  }
  return ports;
}

/**
 * PostgreSQL's processes under the server listening on `port`, split into backends serving a client
 * whose port is in `clientPorts` (from its process title, "postgres: user db 127.0.0.1(54321) idle"),
 * backends of other clients, and the server's own (postmaster, WAL writer, checkpointer, …).
 */
export function postgresProcesses(port: number, clientPorts: ReadonlySet<number>): { ours: number[]; others: number[]; server: number[] } {
  const { backends, server } = postgresBackends(port);
  const out = { ours: [] as number[], others: [] as number[], server };
  for (const [pid, client] of backends) (clientPorts.has(client) ? out.ours : out.others).push(pid);
  return out;
}

/** One row of a CPU budget: a name and the processes it stands for (asked again at each sample). */
export interface CpuRow {
  name: string;
  pids: () => readonly number[];
}

/** CPU ms so far of each row's processes, by pid. */
export type CpuSample = Map<string, Map<number, number>>;

export function sampleCpu(rows: readonly CpuRow[]): CpuSample {
  return new Map(
    rows.map((row) => {
      const byPid = new Map<number, number>();
      for (const pid of row.pids()) {
        try {
          byPid.set(pid, cpuMs(pid));
        } catch {
          // exited meanwhile
        }
      }
      return [row.name, byPid];
    }),
  );
}

/**
 * CPU ms each row spent between two samples: a process present in both counts its difference, one
 * that appeared meanwhile (a new database backend) all it used; one that exited meanwhile is lost.
 */
export function cpuSpentMs(from: CpuSample, to: CpuSample): Map<string, number> {
  const spent = new Map<string, number>();
  for (const [name, now] of to) {
    const before = from.get(name) ?? new Map<number, number>();
    let ms = 0;
    for (const [pid, cpu] of now) ms += cpu - (before.get(pid) ?? 0);
    spent.set(name, ms);
  }
  return spent;
}

/**
 * The machine's CPU time so far, in clock ticks, from the first line of /proc/stat: all of it, the
 * part no process wanted (idle and waiting for I/O), and the part the hypervisor gave to other
 * machines (steal). Guest time is already inside user and nice, so it is not added again.
 */
export interface MachineCpu {
  total: number;
  idle: number;
  steal: number;
}

export function machineCpuOf(procStat: string): MachineCpu {
  const ticks = /^cpu\s+(.*)$/m.exec(procStat)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = ticks;
  return { total: user + nice + system + idle + iowait + irq + softirq + steal, idle: idle + iowait, steal };
}

export const machineCpu = (): MachineCpu => machineCpuOf(readFileSync('/proc/stat', 'utf8'));

/** Shares (%) of the machine's CPU time over a window that went unused, and that the hypervisor took. */
export interface MachineShares {
  idlePercent: number;
  stealPercent: number;
}

/** The shares between two readings: whether a run was short of CPU, or left some of it idle. */
export function machineShares(from: MachineCpu, to: MachineCpu): MachineShares {
  const total = to.total - from.total;
  if (total <= 0) return { idlePercent: NaN, stealPercent: NaN };
  return { idlePercent: (100 * (to.idle - from.idle)) / total, stealPercent: (100 * (to.steal - from.steal)) / total };
}

/** The median idle and stolen shares of several measured windows (each share on its own). */
export const medianShares = (shares: readonly MachineShares[]): MachineShares => ({
  idlePercent: median(shares.map((s) => s.idlePercent)),
  stealPercent: median(shares.map((s) => s.stealPercent)),
});

/** "machine 8% idle, 0% stolen". */
export const formatMachine = (s: MachineShares): string => `machine ${Math.round(s.idlePercent)}% idle, ${Math.round(s.stealPercent)}% stolen`;
