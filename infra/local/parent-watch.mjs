// A process that must not outlive its parent: `npm start`'s supervisor (infra/local/start.ts)
// watches the process that started it (npm), and every service it runs watches the supervisor
// (through supervised-service.mjs, preloaded with `node --import`).
//
// How it sees a parent's death: on Linux, by re-reading its parent pid from /proc/self/stat
// every 500 ms. A process whose parent dies is re-parented (to init or a sub-reaper), so the
// value changes whatever the cause, and a recycled pid cannot fool it. Node's process.ppid is
// read once at start-up and never changes, so it cannot be used. Elsewhere, it probes the
// parent's pid with signal 0. The timer is unref'd: it never keeps a process alive. Plain
// JavaScript (no TypeScript loader) because the services run as plain-Node bundles.
import { readFileSync } from 'node:fs';

export const PARENT_POLL_MS = 500;

/** The current parent pid: /proc/self/stat on Linux (fresh on every call), else undefined. */
export function currentParentPid() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/**
 * Call `onGone` once when the process `parentPid` stops being this process's parent. Returns a
 * function that stops watching.
 */
export function watchParent(parentPid, onGone, pollMs = PARENT_POLL_MS) {
  const gone = () => {
    const ppid = currentParentPid();
    return ppid === undefined ? !alive(parentPid) : ppid !== parentPid;
  };
  const timer = setInterval(() => {
    if (!gone()) return;
    clearInterval(timer);
    onGone();
  }, pollMs);
  timer.unref();
  if (gone()) {
    clearInterval(timer);
    queueMicrotask(onGone);
  }
  return () => clearInterval(timer);
}
