import type { DeliverAt } from '@herald/contracts';

export interface ScheduleFlags {
  deliverAt?: string;
  localTime?: string;
  date?: string;
  jitter?: string;
}

/** `--deliver-at` or `--local-time [--date] [--jitter]` as the job's deliverAt (the contract checks each value). */
export function deliverAtFromFlags(o: ScheduleFlags): DeliverAt | undefined {
  if (o.deliverAt !== undefined && o.localTime !== undefined) throw new Error('give --deliver-at (an instant) or --local-time (a wall-clock time), not both');
  if (o.localTime === undefined && (o.date !== undefined || o.jitter !== undefined)) throw new Error('--date and --jitter go with --local-time');
  if (o.deliverAt !== undefined) return { at: o.deliverAt };
  if (o.localTime === undefined) return undefined;
  return { localTime: o.localTime, ...(o.date !== undefined && { date: o.date }), ...(o.jitter !== undefined && { jitter: o.jitter }) };
}

/** A flag's whole number, or a one-line error naming the flag (the contract then checks its range). */
export function wholeNumber(flag: string, raw: unknown): number {
  const text = String(raw);
  if (!/^\d+$/.test(text)) throw new Error(`${flag} must be a whole number, got "${text}"`);
  return Number(text);
}
