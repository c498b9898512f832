export * from './database.ts';
export { QueryTimeoutError } from './query-timeout.ts';
export { deferWhileDatabaseUnavailable, isDatabaseUnavailable, refusedValueReason } from './database-errors.ts';
export * from './tables.ts';
export { MigrationError, DEFAULT_MIGRATIONS_DIR, type MigrationLockOptions } from './migrations.ts';
export * from './device-repository.ts';
export type { RegistrationResult } from './device-registration.ts';
export type { InvalidationInput, InvalidationResult } from './device-invalidation.ts';
export type { Audience, AudienceDevice, SkipReason, TargetDevice, TargetRequest } from './device-targets.ts';
export { deviceKey, type DeviceKey } from './device-key.ts';
export * from './preference-repository.ts';
export * from './app-repository.ts';
export * from './app-cache.ts';
export * from './delivery-ledger.ts';
export { LEDGER_PRUNE_LOCK_CLASS, DEFAULT_PRUNE_BATCH } from './ledger-prune.ts';
export { DEFAULT_JOB_PRUNE_BATCH, ORPHAN_WALK_STATEMENTS_PER_RUN, pruneJobs, pruneOrphanOutcomes, type OrphanWalk } from './job-prune.ts';
export { DEFAULT_DEVICE_PRUNE_BATCH, pruneDevices } from './device-prune.ts';
export { DEFAULT_MUTE_PRUNE_BATCH, pruneExpiredMutes } from './mute-prune.ts';
export { DEFAULT_TOPIC_DELETE_BATCH, removeDeletedMembers, type RemoveMembersOptions } from './topic-deletion.ts';
export {
  DEFAULT_TOPIC_MEMBER_SWEEP_BATCH,
  startTopicMemberRemovals,
  sweepDeletedTopicMembers,
  type RemoveTopicMembers,
  type TopicMemberRemovals,
} from './topic-member-sweep.ts';
export * from './scheduled-push-repository.ts';
export { cancelJob, cancelJobFully, type JobCancellation } from './cancel-job.ts';
export * from './fanout-repository.ts';
export { audienceProblem } from './fanout-audience-check.ts';
export { createCancelledJobsReader, type CancelledJobsKey, type CancelledJobsReader } from './fanout-cancellations.ts';
export type { ScheduleListener } from './schedule-listener.ts';
export * from './rate-limit-repository.ts';
export * from './secret-box.ts';
export * from './secret-reseal.ts';
export * from './app-credentials.ts';
export * from './api-key-repository.ts';
export * from './job-repository.ts';
export type { CancelledPush, PushOutcomeEntry, PushOutcomeKind, PushRecord } from './push-outcomes.ts';
export { startReplayedOutcomes, type ReplayedOutcomes, type ReplayedPushIds } from './replayed-outcomes.ts';
export * from './subscription-repository.ts';
export * from './audit-log.ts';
export { listUserDevices, type UserDevice } from './user-devices.ts';
export { appHasWebDevices } from './app-web-devices.ts';
export { recordWebVapidKey, type SentSubscription } from './web-vapid-store.ts';
export { toJobStatus, toJobPushList } from './job-status-view.ts';
export { readAudienceChunk, audienceSize, AudienceCursorError, type AudienceSpec, type AudienceChunk, type AudienceChunkRequest } from './audience-stream.ts';
export { segmentSql } from './segment-sql.ts';
export * from './topic-store.ts';
export { applyFollowEvents, followerCount, type FollowEdgeEvent, type FollowResult } from './follow-edges.ts';
export { DEFAULT_FOLLOWER_INDEX, refillFollowerIndex, type FollowerIndexOptions } from './follow-index.ts';
export { skipReasonSql } from './device-targets.ts';
export { createAudienceStore, type AudienceStore } from './topic-audience-store.ts';
export { readPlannedDevices, plannedOf, type PlannedDevicesRequest } from './audience-planned.ts';
export { seedAudience, explainAudienceChunk, type AudienceSeed } from './audience-stream-seed.ts';
export { holdLease, type Lease, type LeaseOptions } from './lease.ts';
export { DEFAULT_PARKED_LEASE_MS, ParkedLeaseInterrupted, ParkedQueueBusy, withParkedLease, type ParkedLeaseOptions } from './parked-lease.ts';
export { createAnnouncedAlarmStore, type AnnouncedAlarm, type AnnouncedAlarmStore } from './announced-alarms.ts';
export { startDatabaseClock, type DatabaseClock } from './database-clock.ts';
export { eraseEveryAppPreferences, eraseUser, erasureKey, type UserErasure } from './user-erasure.ts';
export { createProviderLaneStore, readDownLanes, LANE_REFRESH_MS, type DownLane, type DownLaneRow, type ProviderLaneStore } from './provider-lane-store.ts';
