import { audienceProblem, audienceSize, readAudienceChunk, readPlannedDevices, type Database } from '@herald/db';
import type { AudienceSource } from './audience-source.ts';

/** The audience reader of libs/db (keyset chunks, sizes) and the unknown-topic check. */
export function createAudienceSource(db: Database): AudienceSource {
  return {
    read: (req) => readAudienceChunk(db, req),
    size: (req) => audienceSize(db, req),
    planned: (req) => readPlannedDevices(db, req),
    problem: ({ app, audience }) => audienceProblem(db.kysely, app, audience.kind === 'topic' ? { topic: audience.topic } : {}),
  };
}
