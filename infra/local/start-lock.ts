/**
 * One `npm start` per state directory: `<HERALD_STATE_DIR>/start.lock` holds the running
 * supervisor's record (pid, since when, where, its services' pids), so a second `npm start`
 * can say what is running and stop instead of fighting it for the ports. A lock whose process
 * is gone (or whose pid now belongs to another process: the start time is recorded too) is
 * stale and is taken over.
 */
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { commandLine, isRunning, listeningPorts, processStartTime } from './process-info.ts';

export interface ServiceRecord {
  name: string;
  pid: number | undefined;
  pidStart: number | undefined;
  /** Exits since it last ran steadily (0: healthy). */
  exits: number;
  /** While it is failing: the delay before its next start, ms. */
  restartInMs: number | undefined;
}

export interface StartRecord {
  pid: number;
  /** Start time of `pid` (process-info.ts), to tell it from a recycled pid. */
  pidStart: number | undefined;
  since: string;
  cwd: string;
  stateDir: string;
  services: ServiceRecord[];
}

export type LockResult =
  { kind: 'acquired'; lock: StartLock; stale: StartRecord | undefined } | { kind: 'held'; holder: StartRecord };

function readRecord(file: string): StartRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as StartRecord;
  } catch {
    return undefined;
  }
}

/** Write `record` to a private file next to `file` and return its name (then linked or renamed into place: readers never see half a file). */
function writeTemp(file: string, record: StartRecord): string {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(record, null, 2)}\n`);
  return temp;
}

export class StartLock {
  constructor(
    readonly file: string,
    private record: StartRecord,
  ) {}

  /** Record the services' current pids and health (for a second `npm start` to report). */
  update(services: ServiceRecord[]): void {
    this.record = { ...this.record, services };
    renameSync(writeTemp(this.file, this.record), this.file);
  }

  release(): void {
    if (readRecord(this.file)?.pid !== this.record.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}

/** Take the lock at `file` for `record`, or say who holds it. */
export function acquireStartLock(file: string, record: StartRecord): LockResult {
  let stale: StartRecord | undefined = undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const temp = writeTemp(file, record);
    try {
      linkSync(temp, file); // fails if the lock exists: atomic, and the lock is never half written
      return { kind: 'acquired', lock: new StartLock(file, record), stale };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(temp);
    }
    const holder = readRecord(file);
    if (holder !== undefined && isRunning(holder.pid, holder.pidStart)) return { kind: 'held', holder };
    // Stale (or unreadable): move it aside, and keep it aside only if it is the one judged stale;
    // a lock another start wrote meanwhile goes back.
    const aside = `${file}.stale-${process.pid}`;
    try {
      renameSync(file, aside);
    } catch {
      continue; // another start moved it first
    }
    const moved = readRecord(aside);
    if (moved !== undefined && moved.pid !== holder?.pid && isRunning(moved.pid, moved.pidStart)) {
      try {
        linkSync(aside, file);
      } catch {
        // yet another start holds it now; the next attempt reports that one
      }
    } else {
      stale = moved;
    }
    unlinkSync(aside);
  }
  const holder = readRecord(file);
  if (holder !== undefined) return { kind: 'held', holder };
  throw new Error(`could not take the lock ${file}`);
}

/** Services of a stale record whose processes still run (orphans of a supervisor that was killed, on their way out). */
export function survivingServices(record: StartRecord): ServiceRecord[] {
  return record.services.filter((s) => s.pid !== undefined && isRunning(s.pid, s.pidStart));
}

function ago(since: Date): string {
  const s = Math.max(0, Math.round((Date.now() - since.getTime()) / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/** One paragraph for a person: what is running, since when, where, on which ports, and how to stop it. */
export function describeHolder(holder: StartRecord): string {
  const running = holder.services.filter((s) => s.pid !== undefined && isRunning(s.pid, s.pidStart));
  const ports = listeningPorts(running.map((s) => s.pid ?? 0));
  const listening = running
    .map((s) => ({ name: s.name, ports: ports.get(s.pid ?? 0) ?? [] }))
    .filter((s) => s.ports.length > 0)
    .map((s) => `${s.name} ${s.ports.join('/')}`);
  const failing = holder.services.filter((s) => s.exits > 0).map((s) => `${s.name} (${s.exits} exits)`);
  const since = new Date(holder.since);
  const up = `${running.length} of ${holder.services.length} services up`;
  return [
    `Herald is already running: npm start pid ${holder.pid} (${commandLine(holder.pid) ?? 'command unknown'}),`,
    `since ${since.toISOString()} (${ago(since)}), in ${holder.cwd}, state dir ${holder.stateDir};`,
    `${up}${listening.length > 0 ? `, listening on ports: ${listening.join(', ')}` : ''}${failing.length > 0 ? `; failing: ${failing.join(', ')}` : ''}.`,
    `Stop it with Ctrl-C in its terminal or \`kill ${holder.pid}\`. A second Herald beside it needs its own`,
    'HERALD_STATE_DIR, ports (API_PORT, HTTP_PORT, SANDBOX_*_PORT), RabbitMQ vhost (AMQP_URL) and DATABASE_SCHEMA.',
  ].join(' ');
}

export const ownStartTime = (): number | undefined => processStartTime('self');
