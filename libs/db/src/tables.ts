import type { Generated, Selectable } from 'kysely';
import type { LimitedChannel, Platform, TokenKind } from '@herald/contracts';

/** Row types as PostgreSQL returns them (bigint as string, timestamptz as Date). */
export interface AppsTable {
  id: string;
  apns_topic: string | null;
  fcm_project_id: string | null;
  enabled: Generated<boolean>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** Per-app credentials (0008); the *_secret columns hold SecretBox envelopes. */
  apns_auth: Generated<'token' | 'certificate' | null>;
  apns_key_id: Generated<string | null>;
  apns_team_id: Generated<string | null>;
  apns_endpoint: Generated<'production' | 'development' | 'local'>;
  apns_secret: Generated<string | null>;
  fcm_auth: Generated<'service-account' | 'access-token' | null>;
  fcm_endpoint: Generated<'google' | 'local'>;
  fcm_secret: Generated<string | null>;
  credentials_version: Generated<number>;
  /** Per-app connection settings (0011); the *_proxy_secret columns hold SecretBox envelopes. */
  apns_address: Generated<string | null>;
  apns_port: Generated<number | null>;
  apns_ca_pem: Generated<string | null>;
  apns_proxy_secret: Generated<string | null>;
  fcm_host: Generated<string | null>;
  fcm_port: Generated<number | null>;
  fcm_ca_pem: Generated<string | null>;
  fcm_proxy_secret: Generated<string | null>;
  /** When the APNs client certificate (auth "certificate") stops being valid (0039); null otherwise, and until a pusher first reads one sealed before 0039. */
  apns_certificate_expires_at: Generated<Date | null>;
  /** Web Push (0019): the VAPID key pairs (secrets sealed), the contact subject, the push-service allow-list (NULL: the default). */
  web_vapid_public_key: Generated<string | null>;
  web_vapid_secret: Generated<string | null>;
  web_vapid_subject: Generated<string | null>;
  web_vapid_previous_public_key: Generated<string | null>;
  web_vapid_previous_secret: Generated<string | null>;
  web_push_hosts: Generated<string[] | null>;
}

export interface DevicesTable {
  id: Generated<string>;
  app: string;
  platform: Platform;
  token: string;
  /** device | voip | liveactivity (migration 0012): which push types reach this token. */
  token_kind: Generated<TokenKind>;
  /** NULL only on a tombstone (an unregister for a token never registered). */
  user_id: string | null;
  timezone: string | null;
  locale: string | null;
  registered_at: Date | null;
  last_event_at: Date;
  /** When the event in last_event_at was applied, by the database's clock (migration 0029); null before. */
  event_applied_at: Generated<Date | null>;
  /** The highest event time from a clock running ahead that a later event overruled (later-event.ts). */
  event_ahead_mark: Generated<Date | null>;
  invalidated_at: Date | null;
  invalidation_reason: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** When a register last named another user than the row's (migration 0028); null: never since. */
  user_changed_at: Generated<Date | null>;
  /** What the app reported at registration (migration 0020); parts: numeric, trailing zeros trimmed (generated). */
  app_version: Generated<string | null>;
  app_version_parts: Generated<number[] | null>;
  last_seen_at: Generated<Date | null>;
  /** Web Push subscriptions (0019): the keys (base64url) and the application server key they were made with. */
  web_p256dh: Generated<string | null>;
  web_auth: Generated<string | null>;
  web_vapid_key: Generated<string | null>;
  /** The device that replaced this one (a register naming this token as its previousToken, migration 0045): a push for this token goes there. */
  replaced_by: Generated<string | null>;
  /** When replaced_by was set (the database's clock, migration 0045). */
  replaced_at: Generated<Date | null>;
  /** The transaction that set replaced_by (migration 0046), for a fan-out's start snapshot. */
  replaced_xid: Generated<string | null>;
}

/** A sign-out naming a user that did not apply, the newest per device and user (migration 0044; device-registration.ts). */
export interface DeviceSignoutsTable {
  app: string;
  platform: Platform;
  token: string;
  user_id: string;
  signed_out_at: Date;
  /** When it was kept (the database's clock, 0044). */
  kept_at: Generated<Date>;
}

export interface OptOutsTable {
  user_id: string;
  category: string;
  /** The app it applies to; NULL: every app (migration 0018). */
  app: Generated<string | null>;
  created_at: Generated<Date>;
}

export interface MutesTable {
  user_id: string;
  object_id: string;
  /** The app it applies to; NULL: every app (migration 0018). */
  app: Generated<string | null>;
  until: Date | null;
  created_at: Generated<Date>;
}

export type LedgerState = 'sending' | 'done';

export interface DeliveryLedgerTable {
  push_id: string;
  state: LedgerState;
  outcome: string | null;
  owner: string;
  claimed_at: Generated<Date>;
  completed_at: Date | null;
}

export interface RateLimitsTable {
  platform: LimitedChannel;
  /** '' for the platform-wide budget. */
  app: Generated<string>;
  rate_per_sec: number;
  window_index: Generated<string>;
  granted: Generated<number>;
  last_grant: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** A provider's Retry-After for one app on one platform, shared by the pushers (migration 0013). */
export interface ProviderPausesTable {
  platform: LimitedChannel;
  /** The app, or for Web Push `<app>@<push service>` (at most 400 characters since 0038). */
  app: string;
  paused_until: Date;
  updated_at: Generated<Date>;
}

/** A provider lane one pusher takes to be down (migration 0043; provider-lane-store.ts), on PostgreSQL's clock. */
export interface ProviderLanesTable {
  /** The pusher: `<service>@<host>:<pid>`. */
  instance: string;
  platform: Platform;
  lane: string;
  down_since: Date;
  seen_at: Date;
}

export interface ScheduledPushesTable {
  platform: Platform;
  due_at: Date;
  job_id: string;
  push_id: string;
  /** The DevicePush as JSON text (a json column: kept verbatim, published as is). */
  payload: unknown;
  expires_at: Date | null;
  trace: Generated<boolean>;
  created_at: Generated<Date>;
  /** The job's opt-out category and muted object, asked again at release (migration 0025). */
  category: string | null;
  object_id: string | null;
}

export type ApiKeyKind = 'team' | 'operator';

export interface ApiKeysTable {
  id: string;
  /** The team, or for an operator key the operator's name. */
  team: string;
  key_hash: string;
  /** Empty for an operator key. */
  apps: string[];
  created_at: Generated<Date>;
  revoked_at: Date | null;
  /** team | operator (migration 0016); one never stands in for the other. */
  kind: Generated<ApiKeyKind>;
}

export type AuditActorKind = 'operator' | 'admin-key' | 'cli';
export type AuditOutcome = 'started' | 'ok' | 'refused' | 'failed';

/** Every operator write action: who, what, when (migration 0016). */
export interface AuditLogTable {
  id: Generated<string>;
  at: Generated<Date>;
  actor_kind: AuditActorKind;
  actor_id: string;
  actor_name: string;
  action: string;
  target: string;
  request: unknown;
  outcome: Generated<AuditOutcome>;
  result: unknown;
  finished_at: Date | null;
}

export interface JobsTable {
  id: string;
  app: string;
  team: string | null;
  accepted_at: Generated<Date>;
  published_at: Date | null;
  targeted: number | null;
  demux_outcome: string | null;
  /**
   * When the demuxer first recorded the job's fan-out (its later fan-outs keep it): before that, a
   * park's time; for an audience job, its fan-out's start.
   */
  demuxed_at: Date | null;
  /** Where Herald adapted the job to a provider's limits (migration 0014). */
  notices: Generated<string[]>;
  /** Target users the demuxer found no device for; why it parked the job itself (migration 0017). */
  no_device: Generated<number | null>;
  demux_reason: Generated<string | null>;
  /** DELETE /v1/jobs/:id or herald job cancel (migration 0021): pushers drop its queued pushes. */
  cancelled_at: Generated<Date | null>;
  /** The latest due time of a push of the job stored for later (migration 0032): its retention counts from it. */
  last_due_at: Generated<Date | null>;
  /** jobContentHash of the job as the HTTP API accepted it or the demuxer read it (migration 0034); NULL for one recorded before, or parked as a body that is no job. */
  content_hash: Generated<Buffer | null>;
  /** The snapshot the first fan-out's read of the devices saw (migration 0047), kept with demuxed_at; a pg_snapshot's text. */
  demux_snapshot: Generated<string | null>;
}

export interface PushOutcomesTable {
  push_id: string;
  job_id: string;
  outcome: string;
  updated_at: Generated<Date>;
  /** Park code or provider reason, the answer, apns-id / FCM name, which device push (migration 0017). */
  code: Generated<string | null>;
  reason: Generated<string | null>;
  provider_message_id: Generated<string | null>;
  platform: Generated<string | null>;
  device_id: Generated<string | null>;
}

export interface WebhookSubscriptionsTable {
  id: string;
  team: string;
  callback_url: string;
  resource_type: string;
  /** '*' for every resource of the type. */
  resource_id: string;
  secret: string;
  enabled: Generated<boolean>;
  failing_since: Date | null;
  /** 0037: the secret before the last rotation, still signed with until previous_secret_until. */
  previous_secret: string | null;
  previous_secret_until: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Generated<Date>;
}

/** Audiences (migration 0020): topics, their members, follow edges and the capped follower index. */
export interface TopicsTable {
  app: string;
  name: string;
  created_at: Generated<Date>;
  subscriber_count: Generated<string>;
}

export interface TopicMembersTable {
  app: string;
  topic: string;
  member_kind: 'user' | 'device';
  /** The user id, or '<platform>:<token>' for a single device. */
  member_id: string;
  subscribed: boolean;
  event_at: Date;
  /** The transaction that inserted the row or last flipped `subscribed` (xid8 as text); null before migration 0026. */
  changed_xid: string | null;
  /** When the event in event_at was applied, by the database's clock (migration 0029); null before. */
  event_applied_at: Generated<Date | null>;
  /** The highest event time from a clock running ahead that a later event overruled (later-event.ts). */
  event_ahead_mark: Generated<Date | null>;
}

/**
 * A deleted topic of an app (migration 0042): a membership event stamped at or before deleted_at
 * is stale, in the topic created again under that name too (topic-deletion.ts).
 */
export interface TopicDeletionsTable {
  app: string;
  topic: string;
  deleted_at: Date;
}

export interface FollowsTable {
  app: string;
  followee: string;
  follower: string;
  following: boolean;
  event_at: Date;
  /** When the event in event_at was applied, by the database's clock (migration 0029); null before. */
  event_applied_at: Generated<Date | null>;
  /** The highest event time from a clock running ahead that a later event overruled (later-event.ts). */
  event_ahead_mark: Generated<Date | null>;
}

export interface FolloweesTable {
  app: string;
  followee: string;
  follower_count: Generated<string>;
  recent_refilled_at: Date | null;
}

export interface FollowerRecentTable {
  app: string;
  followee: string;
  follower: string;
  active_at: Date | null;
}

/** One row per lease of work that must happen once in a fleet (migration 0022). */
export interface LeasesTable {
  name: string;
  holder: string;
  acquired_at: Generated<Date>;
  expires_at: Date;
}

/** 0036: alarms announced as firing and not yet announced resolved (apps/monitor). */
export interface AnnouncedAlarmsTable {
  alarm: string;
  queue: string;
  summary: string;
  value: number;
  threshold: number;
  since: Date;
  fired_at: Date;
}

export interface HeraldTables {
  leases: LeasesTable;
  announced_alarms: AnnouncedAlarmsTable;
  topics: TopicsTable;
  topic_members: TopicMembersTable;
  topic_deletions: TopicDeletionsTable;
  follows: FollowsTable;
  followees: FolloweesTable;
  follower_recent: FollowerRecentTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  apps: AppsTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  jobs: JobsTable;
  push_outcomes: PushOutcomesTable;
  devices: DevicesTable;
  device_signouts: DeviceSignoutsTable;
  opt_outs: OptOutsTable;
  mutes: MutesTable;
  delivery_ledger: DeliveryLedgerTable;
  scheduled_pushes: ScheduledPushesTable;
  rate_limits: RateLimitsTable;
  provider_pauses: ProviderPausesTable;
  provider_lanes: ProviderLanesTable;
}

export type DeviceRow = Selectable<DevicesTable>;
