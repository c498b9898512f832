import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Platform, TokenKind, WebPushKeys } from '@herald/contracts';
import type pg from 'pg';
import { queryPrepared } from './prepared.ts';
import { liveReplacementSql } from './device-replacement.ts';
import type { HeraldTables } from './tables.ts';

export interface TargetRequest {
  /** Caller's key for this request (e.g. the job id); unique within one call. */
  key: string;
  app: string;
  userIds: readonly string[];
  category: string;
  objectId?: string;
  /**
   * The request's job, when it may have been fanned out before (its message may have been handled
   * before: redelivered, retried, deferred, replayed; see findAudience).
   */
  jobId?: string;
}

export interface TargetDevice {
  deviceId: string;
  userId: string;
  app: string;
  platform: Platform;
  token: string;
  tokenKind: TokenKind;
  timezone: string | null;
  locale: string | null;
  /** Web Push subscriptions only: the keys, and the VAPID public key it was made with when the registration said so. */
  webKeys?: WebPushKeys;
  webVapidKey?: string;
  /**
   * The push goes to the device itself, not to its user: a broadcast (or segment), a topic's device
   * member. Its user may change before it is sent (an anonymous id, then a login) and it still goes.
   */
  toDevice?: true;
}

/** Why a device of a target user gets no push: its user opted out of the category, or muted the object. */
export type SkipReason = 'opted-out' | 'muted';

/** An active device of a target user, with why it is skipped (null: it gets the push). */
export interface AudienceDevice extends TargetDevice {
  skipped: SkipReason | null;
  /** Dead now (invalidated or unregistered), returned for a job fanned out before it died (TargetRequest.jobId). */
  gone?: true;
}

/** A device row as findAudience and the audience walks read it: the columns of an AudienceDevice, with its skip reason. */
export interface AudienceDeviceRow {
  id: string;
  user_id: string;
  app: string;
  platform: Platform;
  token: string;
  token_kind: TokenKind;
  timezone: string | null;
  locale: string | null;
  web_p256dh: string | null;
  web_auth: string | null;
  web_vapid_key: string | null;
  skipped: SkipReason | null;
}

/**
 * findAudience's answer: each request's devices, by its key; and `readAs`, by the key of each
 * request read by a statement that found a device (of any request), the snapshot (a pg_snapshot's
 * text) that statement read in. The demuxer records it with the job's first fan-out
 * (DemuxEntry.readAs): a retry reads a replaced device as that read did (queryGone).
 */
export interface Audience extends Map<string, AudienceDevice[]> {
  readonly readAs?: ReadonlyMap<string, string>;
}

interface TargetRow extends AudienceDeviceRow {
  ord: number;
  /** queryTargets: the snapshot the statement read in, on one of its rows (null on the others). */
  read_as?: string | null;
  /** queryGone: the live device this dead one's token was replaced by, when its job's first fan-out read the old one live (replacedSinceRead). */
  moved_to?: string | null;
}

/** A web device's keys as a TargetDevice carries them (nothing for APNs and FCM). */
export function webFieldsOf(r: { web_p256dh: string | null; web_auth: string | null; web_vapid_key: string | null }): Pick<TargetDevice, 'webKeys' | 'webVapidKey'> {
  return {
    ...(r.web_p256dh !== null && r.web_auth !== null && { webKeys: { p256dh: r.web_p256dh, auth: r.web_auth } }),
    ...(r.web_vapid_key !== null && { webVapidKey: r.web_vapid_key }),
  };
}

/** A device row as an AudienceDevice. */
export function toAudienceDevice(r: AudienceDeviceRow): AudienceDevice {
  return {
    deviceId: r.id,
    userId: r.user_id,
    app: r.app,
    platform: r.platform,
    token: r.token,
    tokenKind: r.token_kind,
    timezone: r.timezone,
    locale: r.locale,
    ...webFieldsOf(r),
    skipped: r.skipped,
  };
}

/**
 * The active devices for many requests at once, in ONE query however many requests and users:
 * excludes invalidated devices (those findAudience returns `gone` too), users opted out of the
 * request's category, and users with an active mute (until NULL or after `now`) on the request's
 * objectId. Every key gets an entry.
 */
export async function findTargets(
  db: Kysely<HeraldTables>,
  requests: readonly TargetRequest[],
  now: Date,
): Promise<Map<string, TargetDevice[]>> {
  const audience = await findAudience(db, requests, now);
  return new Map([...audience].map(([key, devices]) => [key, devices.filter((d) => d.skipped === null && d.gone !== true).map(withoutSkipped)]));
}

function withoutSkipped(d: AudienceDevice): TargetDevice {
  const web = { ...(d.webKeys !== undefined && { webKeys: d.webKeys }), ...(d.webVapidKey !== undefined && { webVapidKey: d.webVapidKey }) };
  return { deviceId: d.deviceId, userId: d.userId, app: d.app, platform: d.platform, token: d.token, tokenKind: d.tokenKind, timezone: d.timezone, locale: d.locale, ...web };
}

/**
 * Every active device of the requests' users, in ONE query, each with why it is skipped (its
 * user opted out of the request's category, or muted its objectId) or null: what findTargets
 * returns, plus the devices it leaves out for preferences, so a job's status can count them.
 *
 * A request with a jobId whose job a fan-out recorded before (its row has a demux outcome, not a
 * park's) also gets, from a second query in the same snapshot, its users' devices that died since
 * a fan-out first recorded it, `gone: true`: a fan-out that recorded the job's total and then failed
 * before its pushes were published counted them, and without them its retry would account for
 * fewer pushes than the total it recorded (the job would read in flight for good). The demuxer
 * records them invalid (planJob). Five minutes' margin before that record covers the time between
 * the fan-out's read and its record; a device that died in those minutes before the read is
 * counted too (one invalid push more, the sum still exact). A device that went to another user in
 * between is not found (its push stays in flight: ADR 0009). Requests without a jobId, the usual
 * case, are read as by a first pass (one prepared statement).
 */
export async function findAudience(
  db: Kysely<HeraldTables>,
  requests: readonly TargetRequest[],
  now: Date,
  /** The pool under `db`: the query then runs as a prepared statement (see prepared.ts). */
  pool?: pg.Pool,
): Promise<Audience> {
  const result = new Map<string, AudienceDevice[]>();
  const readAs = new Map<string, string>();
  for (const r of requests) {
    if (result.has(r.key)) throw new Error(`findTargets: duplicate request key ${r.key}`);
    result.set(r.key, []);
  }
  if (!requests.some((r) => r.userIds.length > 0)) return result;
  const add = (reqs: readonly TargetRequest[], rows: readonly TargetRow[], dead: boolean) => {
    for (const row of rows) {
      const req = reqs[row.ord];
      if (req !== undefined) result.get(req.key)?.push({ ...toAudienceDevice(row), ...(dead && { gone: true as const }) });
    }
  };
  /** Every request of one queryTargets statement read in its snapshot, those without a device too. */
  const readIn = (reqs: readonly TargetRequest[], rows: readonly TargetRow[]) => {
    const snapshot = rows.find((r) => r.read_as != null)?.read_as;
    if (snapshot != null) for (const r of reqs) readAs.set(r.key, snapshot);
    return rows;
  };
  const answer = (): Audience => Object.assign(result, { readAs });
  const again = requests.filter((r) => r.jobId !== undefined);
  const first = again.length === 0 ? requests : requests.filter((r) => r.jobId === undefined);
  if (first.length > 0) add(first, readIn(first, await queryTargets(db, first, now, pool)), false);
  if (again.length === 0) return answer();
  // A retry's live and dead devices in one snapshot: a device that died between two reads would be
  // found alive and dead (counted twice, one push made), or neither.
  const [live, gone] = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => [readIn(again, await queryTargets(trx, again, now, undefined)), await queryGone(trx, again, now)] as const);
  // A device whose token was replaced after the first fan-out read it (queryGone's moved_to), with
  // its replacement among the live ones, is one device: addressed as the old one, as that fan-out
  // did, its push is the same push (one send, wherever that fan-out got to) and the pusher moves
  // it; as the new one it would be a second push to the same phone.
  // (Of two whose chains end at the same live device, the older row, the chain's head.) Only while
  // the live device is the old one's user's: handed on since (another user of the job signed in on
  // it), the old push would be dropped as reassigned there, and its holder's own push is the one.
  const liveByKey = new Map(live.map((r) => [`${r.ord}:${r.id}`, r]));
  const headOf = new Map<string, TargetRow>();
  for (const g of gone) {
    const key = `${g.ord}:${g.moved_to}`;
    const head = headOf.get(key);
    if (g.moved_to != null && liveByKey.get(key)?.user_id === g.user_id && (head === undefined || BigInt(g.id) < BigInt(head.id))) headOf.set(key, g);
  }
  const heads = new Set(headOf.values());
  add(again, live.filter((r) => !headOf.has(`${r.ord}:${r.id}`)), false);
  add(again, [...heads], false);
  add(again, gone.filter((g) => !heads.has(g)), true);
  return answer();
}

/**
 * Why a user's device gets no push (SQL, evaluating to 'opted-out', 'muted' or NULL): the user
 * opted out of the category (in this app or every app), or has an active mute (until NULL or after
 * `now`) on the object. Shared by findAudience and the audience reader (audience-stream.ts).
 */
export function skipReasonSql(
  /** Each a column reference (sql.ref) or a value (sent as a parameter). */
  on: { userId: unknown; app: unknown; category: unknown; objectId: unknown },
  now: Date,
): RawBuilder<SkipReason | null> {
  return sql<SkipReason | null>`case
        when exists (
          select 1 from opt_outs o
          where o.user_id = ${on.userId} and o.category = ${on.category} and (o.app is null or o.app = ${on.app})) then 'opted-out'
        when exists (
          select 1 from mutes m
          where ${on.objectId}::text is not null and m.user_id = ${on.userId} and m.object_id = ${on.objectId}
            and (m.app is null or m.app = ${on.app})
            and (m.until is null or m.until > ${now.toISOString()}::timestamptz)) then 'muted'
      end`;
}

/**
 * Why a push made earlier gets none now (SQL, 'cancelled', 'opted-out', 'muted' or NULL): its job
 * was cancelled, or (a push with a category) skipReasonSql. Shared by the scheduled release and the
 * pushers' claim of a push that waited.
 */
export function cancelledOrSkippedSql(
  /** Each a column reference or a value, as for skipReasonSql, and the job's id. */
  on: { jobId: unknown; userId: unknown; app: unknown; category: unknown; objectId: unknown },
  now: Date,
): RawBuilder<'cancelled' | SkipReason | null> {
  return sql<'cancelled' | SkipReason | null>`case
        when exists (select 1 from jobs j where j.id = ${on.jobId} and j.cancelled_at is not null) then 'cancelled'
        when ${on.category}::text is not null then ${skipReasonSql(on, now)}
      end`;
}

/**
 * Whether a push of an audience job is no longer wanted by the audience itself (SQL, 'left-audience'
 * or NULL): its job went to `topic`, of which neither the user nor the device (`deviceKey`,
 * '<platform>:<token>', as a device member is kept) is a subscribed member now, or to the followers
 * of `followee`, whom the user no longer follows. The fan-out read the audience when the job was
 * accepted; a push stored for days is asked this again when it falls due, as its user's opt-outs
 * are. A member row of a topic that no longer exists is no membership: a deleted topic's rows are
 * removed after its row, a batch at a time, and a deletion cut short leaves them until it is
 * finished (topic-deletion.ts); the topic is looked up only for a member row found. Each a column
 * reference or a value; `topic` and `followee` null for a job of another kind.
 */
export function leftAudienceSql(on: { app: unknown; topic: unknown; followee: unknown; userId: unknown; deviceKey: unknown }): RawBuilder<'left-audience' | null> {
  return sql<'left-audience' | null>`case
        when ${on.topic}::text is not null and not exists (
          select 1 from topic_members tm
          join topics tp on tp.app = tm.app and tp.name = tm.topic
          where tm.app = ${on.app} and tm.topic = ${on.topic} and tm.subscribed
            and ((tm.member_kind = 'user' and tm.member_id = ${on.userId}) or (tm.member_kind = 'device' and tm.member_id = ${on.deviceKey}))) then 'left-audience'
        when ${on.followee}::text is not null and not exists (
          select 1 from follows fo
          where fo.app = ${on.app} and fo.followee = ${on.followee} and fo.follower = ${on.userId} and fo.following) then 'left-audience'
      end`;
}

/** Requests and users travel as arrays (unnest), so the statement's size never depends on them. */
async function queryTargets(db: Kysely<HeraldTables>, requests: readonly TargetRequest[], now: Date, pool: pg.Pool | undefined): Promise<TargetRow[]> {
  const query = sql<TargetRow>`
    with req as (
      select * from unnest(
        ${requests.map((r) => r.app)}::text[], ${requests.map((r) => r.category)}::text[],
        ${requests.map((r) => r.objectId ?? null)}::text[]
      ) with ordinality as r(app, category, object_id, ord)
    ), wanted as materialized (${wantedUsers(requests)})
    select ${targetColumns(now)},
      -- The statement's snapshot (findAudience's readAs), on one row: its text lists the
      -- transactions in progress, and would be sent again with each device.
      case when row_number() over () = 1 then pg_current_snapshot()::text end as read_as
    from wanted w
    join devices d on d.app = w.app and d.user_id = w.user_id and d.invalidated_at is null
    order by w.ord, d.id`;
  return queryPrepared(db, pool, query);
}

/**
 * Whether the dead device `d`'s token was replaced after the first fan-out of the request `r`'s job
 * read the devices: the link's transaction (replaced_xid) is not in that read's snapshot
 * (demux_snapshot), so the read found the old token live and addressed it, however the link's time
 * and the record's fall (a rotation committed between the read and the record, or one that wrote
 * its link before the read and committed after it). A link or a record without them (made before
 * migrations 0046 and 0047; a read that found no device): the link's time after the record's. It
 * asks whether the read saw the link, not whether the old device was live in it: one dead before
 * the read (a provider's 410) and named as previousToken since is read as its replacement too, a
 * push the first pass did not make (one, to a phone that had none of that pass).
 */
const replacedSinceRead = sql<boolean>`(case when d.replaced_xid is not null and r.demux_snapshot is not null
        then not pg_visible_in_snapshot(d.replaced_xid, r.demux_snapshot) else d.replaced_at > r.demuxed_at end)`;

/**
 * findAudience's devices that died since a fan-out first recorded their request's job (five
 * minutes' margin), for the requests whose job a fan-out recorded (a demux outcome; a job parked
 * before any fan-out has 'parked: <code>' and targeted 0); found by devices_by_app_user.
 * updated_at, not invalidated_at: an invalidation may date the death back to the provider's timestamp.
 * `moved_to`: for one whose token was replaced after that fan-out read it live (replacedSinceRead),
 * the live device its chain ends at.
 */
async function queryGone(db: Kysely<HeraldTables>, requests: readonly TargetRequest[], now: Date): Promise<TargetRow[]> {
  const { rows } = await sql<TargetRow>`
    with req as (
      select r.*, j.demuxed_at - interval '5 minutes' as since, j.demuxed_at, j.demux_snapshot
      from unnest(
        ${requests.map((r) => r.app)}::text[], ${requests.map((r) => r.category)}::text[],
        ${requests.map((r) => r.objectId ?? null)}::text[], ${requests.map((r) => r.jobId ?? null)}::text[]
      ) with ordinality as r(app, category, object_id, job_id, ord)
      join jobs j on j.id = r.job_id and j.demux_outcome not like 'parked: %'
    ), wanted as materialized (${wantedUsers(requests)})
    select ${targetColumns(now)},
      case when ${replacedSinceRead} then (select m.id::text from (${liveReplacementSql(sql.ref('d.id'))}) m) end as moved_to
    from wanted w
    join req r on r.ord = w.ord
    join devices d on d.app = w.app and d.user_id = w.user_id and d.invalidated_at is not null and d.updated_at >= r.since
    order by w.ord, d.id`.execute(db);
  return rows;
}

/** Each request's distinct users, with the request's ord, app, category and object (from `req`). */
function wantedUsers(requests: readonly TargetRequest[]): RawBuilder<unknown> {
  const userOrds = requests.flatMap((r, ord) => r.userIds.map(() => ord));
  return sql`
      select distinct r.ord, r.app, r.category, r.object_id, u.user_id
      from unnest(${userOrds}::int[], ${requests.flatMap((r) => r.userIds)}::text[]) as u(ord, user_id)
      join req r on r.ord = u.ord + 1`;
}

/** A TargetRow's columns from the device `d` of the wanted user `w`. */
function targetColumns(now: Date): RawBuilder<unknown> {
  const skipped = skipReasonSql({ userId: sql.ref('w.user_id'), app: sql.ref('w.app'), category: sql.ref('w.category'), objectId: sql.ref('w.object_id') }, now);
  return sql`(w.ord - 1)::int as ord, d.id, d.user_id, d.app, d.platform, d.token, d.token_kind, d.timezone, d.locale,
      d.web_p256dh, d.web_auth, d.web_vapid_key, ${skipped} as skipped`;
}
