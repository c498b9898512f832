/**
 * What Linux's /proc says about processes: whether a pid is still the process it was (not a
 * recycled pid), its command line, the TCP ports it listens on, and who holds a port. Used by
 * `npm start` to say what is already running and by its tests. Where there is no /proc these
 * answer "unknown" (undefined, empty) rather than guess.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const hasProc = ((): boolean => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
})();

/** Fields of /proc/<pid>/stat after "pid (comm)": [state, ppid, …]; undefined when gone. */
function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may hold spaces and parentheses: split after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the pid, it names one process for good. */
export function processStartTime(pid: number | 'self'): number | undefined {
  const start = Number(statFields(pid)?.[19]);
  return Number.isFinite(start) ? start : undefined;
}

/** Whether the process `pid` that started at `startTime` (processStartTime; undefined: any) still runs, zombies excluded. */
export function isRunning(pid: number, startTime: number | undefined): boolean {
  if (!hasProc) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  const fields = statFields(pid);
  if (fields === undefined || fields[0] === 'Z') return false;
  return startTime === undefined || Number(fields[19]) === startTime;
}

/** The command line of `pid`, space-separated; undefined when it cannot be read. */
export function commandLine(pid: number): string | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw
      .split('\0')
      .filter((a) => a !== '')
      .join(' ');
  } catch {
    return undefined;
  }
}

/** Listening TCP sockets of this network namespace: socket inode → port. */
function listeningSockets(): Map<string, number> {
  const sockets = new Map<string, number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      const local = f[1];
      const inode = f[9];
      if (f[3] !== '0A' || local === undefined || inode === undefined) continue; // 0A: LISTEN
      sockets.set(inode, parseInt(local.slice(local.lastIndexOf(':') + 1), 16));
    }
  }
  return sockets;
}

function socketInodes(pid: number): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes: string[] = [];
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1] !== undefined) inodes.push(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** The TCP ports each of `pids` listens on, sorted (empty for a pid that listens on none or cannot be read). */
export function listeningPorts(pids: readonly number[]): Map<number, number[]> {
  const sockets = listeningSockets();
  const out = new Map<number, number[]>();
  for (const pid of pids) {
    const ports = new Set<number>();
    for (const inode of socketInodes(pid)) {
      const port = sockets.get(inode);
      if (port !== undefined) ports.add(port);
    }
    out.set(
      pid,
      [...ports].sort((a, b) => a - b),
    );
  }
  return out;
}

/** The process listening on TCP `port`, if this user may see it. */
export function portHolder(port: number): { pid: number; command: string | undefined } | undefined {
  const inodes = new Set([...listeningSockets()].filter(([, p]) => p === port).map(([inode]) => inode));
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const dir of pids) {
    const pid = Number(dir);
    if (socketInodes(pid).some((inode) => inodes.has(inode))) return { pid, command: commandLine(pid) };
  }
  return undefined;
}
