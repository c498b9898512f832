/**
 * Pure: how many tokens window `index` (windows of windowMs since the epoch) holds at ratePerSec.
 * floor((i+1)·r·w/1000) − floor(i·r·w/1000): consecutive windows add up to the rate exactly, so
 * a second made of 10 windows of 100 ms holds exactly ratePerSec tokens, even for odd rates.
 * The database computes the same expression in rate-limit-repository.ts.
 */
export function windowShare(ratePerSec: number, index: number, windowMs: number): number {
  return Math.floor(((index + 1) * ratePerSec * windowMs) / 1000) - Math.floor((index * ratePerSec * windowMs) / 1000);
}
