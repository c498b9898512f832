import { createHash } from 'node:crypto';

/**
 * A deterministic offset in [0, windowMs) for one (job, device): replaying the job gives the
 * same instant, and the devices of one wave spread evenly over the window.
 */
export function jitterOffsetMs(jobId: string, deviceId: string, windowMs: number): number {
  if (windowMs <= 0) return 0;
  const h = createHash('sha256').update('jitter\0').update(jobId).update('\0').update(deviceId).digest();
  // 48 bits of hash, scaled to the window: uniform enough and exact in a double.
  return Math.floor((h.readUIntBE(0, 6) / 2 ** 48) * windowMs);
}
