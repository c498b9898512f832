import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { machineCpu, machineCpuOf, machineShares } from './proc.ts';

describe("the benches' machine meter (/proc/stat)", () => {
  it('reads idle as idle plus I/O wait, and steal apart, from the first line only', () => {
    // user nice system idle iowait irq softirq steal guest guest_nice
    const stat = 'cpu  285671 0 49991 177298 3632 0 8155 30 0 0\ncpu0 145303 0 22151 91162 903 0 2587 10 0 0\nintr 1 2 3\n';
    expect(machineCpuOf(stat)).toEqual({ total: 285671 + 49991 + 177298 + 3632 + 8155 + 30, idle: 177298 + 3632, steal: 30 });
  });

  it('gives the shares of the time between two readings', () => {
    const from = { total: 1000, idle: 400, steal: 10 };
    expect(machineShares(from, { total: 1200, idle: 450, steal: 20 })).toEqual({ idlePercent: 25, stealPercent: 5 });
    expect(machineShares(from, from).idlePercent).toBeNaN();
  });

  it('does not count a CPU this process keeps busy as idle', () => {
    const before = machineCpu();
    const end = performance.now() + 400;
    while (performance.now() < end) {
      // spin: one CPU of the machine busy for 400 ms
    }
    const { idlePercent } = machineShares(before, machineCpu());
    expect(idlePercent).toBeLessThanOrEqual(100 - (0.8 * 100) / availableParallelism());
  });
});
