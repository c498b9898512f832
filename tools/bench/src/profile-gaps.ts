/**
 * V8 samples a profiled thread about every millisecond (`--cpu-prof`'s default) and gives each
 * sample the time since the one before it. A thread that was not sampled for a while (its process
 * descheduled, or the sampler starved on a busy machine) leaves a gap, and the whole gap is charged
 * to the one sample after it: in a profile that is mostly gaps, a few samples carry most of the time
 * and the shares read from it mean little. profile-summary.ts warns about such profiles.
 */
export interface SamplingGaps {
  /** The share (0–1) of the profiled time that lies in gaps longer than the threshold. */
  share: number;
  /** The longest time between two samples, µs. */
  longestUs: number;
}

/** How long without a sample counts as a gap, µs, unless a caller says otherwise. */
export const GAP_US = 10_000;

/** Gaps among `deltasUs` (a profile's timeDeltas, µs) longer than `overUs`. */
export function samplingGaps(deltasUs: readonly number[], overUs = GAP_US): SamplingGaps {
  let total = 0;
  let inGaps = 0;
  let longestUs = 0;
  for (const d of deltasUs) {
    total += d;
    if (d > overUs) inGaps += d;
    longestUs = Math.max(longestUs, d);
  }
  return { share: total > 0 ? inGaps / total : 0, longestUs };
}
