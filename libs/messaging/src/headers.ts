import { Headers } from '@herald/contracts';

/** Every header the messaging lib reads or writes: the contracts' names plus the parked code. */
export const HeraldHeaders = {
  ...Headers,
  parkedCode: 'x-herald-parked-code',
} as const;

/** The attempt number a message carries; 1 when the header is absent or malformed. */
export function attemptOf(headers: Record<string, unknown>): number {
  const raw = headers[HeraldHeaders.attempt];
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 1 ? n : 1;
}
