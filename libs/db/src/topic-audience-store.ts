import type { Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';
import {
  applyTopicMemberships,
  createTopicWithin,
  findTopic,
  listTopics,
  type TopicCreation,
  type TopicMemberEvent,
  type TopicMemberResult,
  type TopicRow,
} from './topic-store.ts';
import { deleteTopic, removeDeletedMembers } from './topic-deletion.ts';
import { applyFollowEvents, type FollowEdgeEvent, type FollowResult } from './follow-edges.ts';

/** Topics, memberships and follow edges behind one object, for the HTTP API and the registrar. */
export interface AudienceStore {
  /**
   * Creates the topic, or finds it (idempotent), once the leftover member rows of a topic of that
   * name deleted before are gone: removed here for DEFAULT_TOPIC_CREATE_REMOVAL_MS at most (skipping
   * rows another holds), then 'members-remain', nothing created, when some are left (createTopicWithin).
   */
  createTopic(app: string, name: string): Promise<TopicCreation>;
  /** Deletes the topic's row, recording the deletion; false when there was none. Its member rows stay for removeDeletedMembers. */
  deleteTopic(app: string, name: string): Promise<boolean>;
  /**
   * Removes the member rows of the deleted topic (none once it is created again), skipping rows
   * another transaction holds, until none is left or `signal` aborts; how many it removed.
   */
  removeDeletedMembers(app: string, name: string, signal?: AbortSignal): Promise<number>;
  findTopic(app: string, name: string): Promise<TopicRow | undefined>;
  listTopics(app: string, limit: number, after?: string): Promise<TopicRow[]>;
  applyTopicMemberships(events: readonly TopicMemberEvent[]): Promise<TopicMemberResult[]>;
  applyFollowEvents(events: readonly FollowEdgeEvent[]): Promise<FollowResult[]>;
}

export function createAudienceStore(db: Kysely<HeraldTables>): AudienceStore {
  return {
    createTopic: (app, name) => createTopicWithin(db, app, name),
    deleteTopic: (app, name) => deleteTopic(db, app, name),
    removeDeletedMembers: (app, name, signal) => removeDeletedMembers(db, app, name, { signal, skipLocked: true }),
    findTopic: (app, name) => findTopic(db, app, name),
    listTopics: (app, limit, after) => listTopics(db, app, limit, after),
    applyTopicMemberships: (events) => applyTopicMemberships(db, events),
    applyFollowEvents: (events) => applyFollowEvents(db, events),
  };
}
