import { describe, expect, it } from 'vitest';
import { serverOfHolder } from './proc.ts';

describe('the process listening on a port', () => {
  // Processes as /proc showed them in a failed CI run: PostgreSQL restarted at pid 29,946, and once
  // pids wrapped (pid_max 32,768) a backend forked a moment ago, still holding the postmaster's
  // listening socket, came first in a scan by pid.
  const parents = new Map([
    [13_697, 29_946], // a backend, forked a moment ago
    [29_946, 812], // the postmaster
    [812, 1], // the shell that started it
  ]);
  const holders = new Set([13_697, 29_946]);
  const parentOf = (pid: number): number | undefined => parents.get(pid);
  const holds = (pid: number): boolean => holders.has(pid);

  it('is the server, not a child that still holds its socket and has a lower pid since pids wrapped', () => {
    expect(serverOfHolder(13_697, parentOf, holds)).toBe(29_946);
  });

  it('is the holder itself when its parent holds no such socket', () => {
    expect(serverOfHolder(29_946, parentOf, holds)).toBe(29_946);
  });
});
