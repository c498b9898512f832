import { parseSegment, type JobAudience, type SegmentFilter } from '@herald/contracts';
import type { AudienceChunk, AudienceDevice, AudienceSpec, PlannedDevicesRequest } from '@herald/db';

export type { AudienceChunk, AudienceSpec } from '@herald/db';

/** The audience reader: keyset chunks of members' devices (skipped ones marked), and the audience's size. */
export interface AudienceSource {
  read(req: { app: string; audience: AudienceSpec; category: string; objectId?: string; after: string | null; until?: string; limit: number; now: Date; startedAt?: Date; asOf?: string }): Promise<AudienceChunk>;
  size(req: { app: string; audience: AudienceSpec }): Promise<{ size: number; exact: boolean }>;
  /** The devices a chunk planned, read again by id (a chunk redone after a redelivery). */
  planned(req: PlannedDevicesRequest): Promise<{ devices: AudienceDevice[]; gone: string[] }>;
  /** Why the audience cannot be expanded (an unknown topic), or undefined. */
  problem?(req: { app: string; audience: AudienceSpec }): Promise<string | undefined>;
}

/** The job's audience as the reader takes it (the contract has validated the segment already). */
export function toAudienceSpec(a: JobAudience): AudienceSpec {
  let segment: SegmentFilter | undefined;
  if (a.segment !== undefined) {
    const parsed = parseSegment(a.segment);
    if (!parsed.ok) throw new Error(`audience.segment: ${parsed.message}`);
    segment = parsed.filter;
  }
  const seg = segment === undefined ? {} : { segment };
  if (a.topic !== undefined) return { kind: 'topic', topic: a.topic, ...seg };
  if (a.followersOf !== undefined) {
    return {
      kind: 'followers',
      of: a.followersOf,
      ...(a.activeWithinDays !== undefined && { activeWithinDays: a.activeWithinDays }),
      ...(a.mostRecent !== undefined && { mostRecent: a.mostRecent }),
      ...seg,
    };
  }
  return { kind: 'broadcast', ...seg };
}
