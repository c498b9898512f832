import { createHash } from 'node:crypto';
import type { Platform } from '@herald/contracts';

const MAX_CHANNEL = 63;

/**
 * The LISTEN/NOTIFY channel that says "pushes were scheduled" for one schema and platform.
 * Readable when it fits PostgreSQL's 63-byte identifier limit, hashed otherwise.
 */
export function scheduleChannel(schema: string, platform: Platform): string {
  const readable = `herald_scheduled_${platform}_${schema}`;
  if (readable.length <= MAX_CHANNEL) return readable;
  return `herald_scheduled_${platform}_${createHash('sha256').update(schema).digest('hex').slice(0, 32)}`;
}
