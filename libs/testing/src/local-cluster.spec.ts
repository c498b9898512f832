import { describe, expect, it } from 'vitest';
import { ownsClusterMarker, TEST_RUN_PID } from './local-cluster.ts';

describe("which test run's teardown stops the local cluster", () => {
  const alive = (pids: number[]) => (pid: number) => pids.includes(pid);

  it('the run that started it, or one left behind by a run that is gone; not another run still going', () => {
    expect(ownsClusterMarker(100, 100, alive([100, 200]))).toBe(true);
    expect(ownsClusterMarker(200, 100, alive([100]))).toBe(true);
    expect(ownsClusterMarker(200, 100, alive([100, 200]))).toBe(false);
    expect(ownsClusterMarker(Number('garbled'), 100, alive([100]))).toBe(true);
  });

  it("knows this run's main process in every worker (the global setup names it)", () => {
    expect(Number(process.env[TEST_RUN_PID])).toBe(process.ppid);
  });
});
