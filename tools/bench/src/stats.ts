/** The benches' summary statistics, one definition for every `npm run bench*` report. */

/** The p-th percentile of an ascending array (nearest rank, the lower one); NaN when empty. */
export const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** The median of the values in any order: the middle one, or the mean of the two middle ones; NaN when empty. */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};

/** median() in the values' own whole units (counts, µs, MB): an even count's mean of its middle two, rounded. */
export const wholeMedian = (xs: readonly number[]): number => Math.round(median(xs));

/**
 * The order of round `i` of things measured side by side: as given in even rounds, reversed in odd
 * ones, so that whatever drifts over a run (a table that grows, the machine's hour) does not always
 * fall on the same one.
 */
export const alternating = <T>(things: readonly T[], i: number): readonly T[] => (i % 2 === 0 ? things : [...things].reverse());
