/** What the benchmarks read about processes from Linux's /proc. */
import { readdirSync, readFileSync } from 'node:fs';

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
