import { sql, type Kysely } from 'kysely';
import type { Registration } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { deviceKey, type DeviceKey } from './device-key.ts';
import { followerActivitySql } from './follow-index.ts';
import { aheadMarkSql, appliedAtSql, CLOCK_SKEW_ALLOWANCE, laterEventSql } from './later-event.ts';

export type RegistrationResult = 'applied' | 'stale';

/**
 * Apply register/unregister events. Last event time wins: an event older than the device's last
 * event (or than its invalidation) changes nothing and is 'stale', and so is an unregister naming a
 * user the device no longer belongs to. A batch is applied as if its events came one at a time in
 * event-time order: one statement for the devices' first events, then one for the devices with a
 * second, and so on (most batches name each device once: one statement). Picking each device's
 * newest event instead lost events that decide: a shared tablet's register(bob, 1),
 * register(alice, 3), unregister(alice, 4) in one batch left it alice's, live, after she signed out.
 *
 * Across batches (registrar replicas, a retried batch, a replayed parked message) her sign-out may
 * come first: the device is still bob's, so it is stale. It is kept (device_signouts, migration
 * 0044: the newest per device and user), and a register of hers stamped at or before it that comes
 * later and would apply applies as her sign-in followed by that sign-out: the device ends her
 * tombstone, the row the two in order make, never her live device after she signed out. A register
 * reads the sign-outs once it holds the device's row, with a snapshot taken then (signedOutAt); one
 * that held it before her sign-out was kept cannot see it, so once kept the sign-out is applied
 * again (applyRound) and, after such a register, finds the device hers.
 *
 * Event times come from the reporting system's clock, often the phone's. Among a device's own
 * events they are compared as given (a phone whose clock runs ahead still orders its own register
 * and unregister), but a stored time from a clock running ahead loses to a later event from a
 * right clock (laterEventSql). The times kept for comparing with what others report (registered_at against a
 * provider's 410 timestamp, invalidated_at, last_seen_at against real time) are never later than
 * now: kept as given, a registration stamped an hour ahead made every 410 of that hour stale, so the
 * dead token went on getting pushes, and a lastSeenAt ahead pinned the device as recently active.
 *
 * A register naming the token it replaces (previousToken: a provider gave the app a new one) marks
 * that token's device replaced by its own in the same statement (replacedLinkSql), so the pushes
 * already made for the old token are sent to the new one instead of being dropped as dead, and
 * gives the new token the old one's topic memberships (replacedMembershipsSql).
 */
export async function applyRegistrations(db: Kysely<HeraldTables>, regs: readonly Registration[]): Promise<RegistrationResult[]> {
  const results: RegistrationResult[] = regs.map(() => 'stale');
  for (const round of inEventOrder(regs)) {
    const rows = round.map((i) => regs[i] as Registration);
    const applied = await applyRound(db, rows);
    for (const i of round) if (applied.has(deviceKey(regs[i] as Registration))) results[i] = 'applied';
  }
  return results;
}

/**
 * One round: the upsert (one statement); then, if sign-outs naming their user did not apply, they
 * are kept and applied once more. A register of that user that held the device's row before the
 * keeping committed read no sign-out and may have made the device the user's, live; the sign-out
 * applied again waits for that row, finds it the user's (the upsert judges the row as locked) and
 * applies, as it would have coming after it. A register that takes the row later reads the kept
 * sign-out (signedOutAt). Returns the keys of the devices changed.
 */
async function applyRound(db: Kysely<HeraldTables>, rows: readonly Registration[]): Promise<Set<string>> {
  const changed = new Set((await upsertStatement(db, rows)).map(deviceKey));
  const kept = rows.filter((r) => r.kind === 'unregister' && r.userId !== undefined && !changed.has(deviceKey(r)));
  if (kept.length > 0) {
    await keepSignouts(db, kept);
    for (const key of (await upsertStatement(db, kept)).map(deviceKey)) changed.add(key);
  }
  return changed;
}

/**
 * Keeps sign-outs naming a user that did not apply (the device another user's, a tombstone, or a
 * later event there), the newest per device and user. One that applied need not be kept: the row is
 * then the user's tombstone at its time, and a register of the user stamped before it is stale.
 * Rows go with the device, or after the device retention (device-prune.ts), or with the user's erasure.
 */
async function keepSignouts(db: Kysely<HeraldTables>, signouts: readonly Registration[]): Promise<void> {
  if (signouts.length === 0) return;
  await sql`
    insert into device_signouts as s (app, platform, token, user_id, signed_out_at)
    select * from unnest(
      ${signouts.map((r) => r.app)}::text[], ${signouts.map((r) => r.platform)}::text[], ${signouts.map((r) => r.token)}::text[],
      ${signouts.map((r) => r.userId ?? null)}::text[], ${signouts.map((r) => r.eventAt)}::timestamptz[]
    ) as u(app, platform, token, user_id, signed_out_at)
    order by 1, 2, 3, 4 -- one lock order for every batch
    on conflict (app, platform, token, user_id) do update set signed_out_at = excluded.signed_out_at, kept_at = now()
    where excluded.signed_out_at > s.signed_out_at`.execute(db);
}

/**
 * The batch's indexes in rounds: round k holds each device's k-th event by event time (ties in the
 * batch's order), so no statement names a device twice and each device's events go in order. A
 * register naming its previousToken counts as an event of that token's device too: it comes after
 * the device's earlier events and before its later ones, as one at a time would apply them (in one
 * statement with them it would link nothing: replacedLinkSql). An app's register on start and its
 * new token's, moments later, often share a batch.
 */
function inEventOrder(regs: readonly Registration[]): number[][] {
  const order = regs.map((r, i) => ({ i, at: Date.parse(r.eventAt) })).sort((a, b) => a.at - b.at || a.i - b.i);
  const lastRound = new Map<string, number>();
  const rounds: number[][] = [];
  for (const { i } of order) {
    const reg = regs[i] as Registration;
    const keys = [deviceKey(reg)];
    if (reg.kind === 'register' && reg.previousToken !== undefined) keys.push(deviceKey({ ...reg, token: reg.previousToken }));
    const k = Math.max(...keys.map((key) => lastRound.get(key) ?? -1)) + 1;
    for (const key of keys) lastRound.set(key, k);
    (rounds[k] ??= []).push(i);
  }
  return rounds;
}

/**
 * In the upsert's conflict clause: the incoming register is the stored event delivered again (its
 * time, and the stored event a register: not an unregister, though a provider may have invalidated
 * the token since). It counts as registered when it was first applied, so against a provider's
 * invalidation since then it is stale, as its first delivery would be now.
 */
const sameRegister = sql`(excluded.last_event_at = d.last_event_at and excluded.registered_at is not null
  and d.registered_at is not null and d.invalidation_reason is distinct from 'unregistered')`;

/**
 * In the upsert's conflict clause: the incoming row is an unregister of a token a provider declared
 * dead (invalidated for another reason than 'unregistered'). The row keeps the provider's reason and
 * time: made 'unregistered', the device prune (which keeps logouts' tombstones) never deleted it,
 * and GET /v1/devices lost why the token died.
 */
const signOutOfDead = sql`(excluded.registered_at is null and d.invalidated_at is not null
  and d.invalidation_reason is distinct from 'unregistered')`;

/**
 * In the upsert's conflict clause, once the register applies: its user's newest sign-out of the
 * device kept at or after it (keepSignouts), or NULL. The register then applies as the sign-in
 * followed by that sign-out. Read by a volatile function (migration 0044) on the row as locked, with
 * a snapshot taken then: a sign-out kept while this statement waited for the row is seen. Only a
 * device that had a row can have one (a sign-out of a missing row applies, as its tombstone).
 * Not asked of a register of the user whose live device it is (a refresh, most registers): a
 * sign-out of hers was kept only while the device was not hers, and the register that made it hers
 * live since was later than it, so every register of hers that applies now is later still.
 */
const signedOutAt = sql`(case when excluded.registered_at is not null and (d.user_id is distinct from excluded.user_id or d.invalidated_at is not null)
  then herald_device_signed_out(d.app, d.platform, d.token, excluded.user_id, excluded.last_event_at, ${CLOCK_SKEW_ALLOWANCE}) end)`;

/**
 * In the upsert (a CTE beside `up`, only in a statement with a register naming a previousToken):
 * the previous token's device `o` is marked replaced by the register's, when the register applied
 * and made its token the user's live device (not a sign-in followed by a kept sign-out), and `o` is
 * still hers (not another user's since, not a tombstone, not signed out of: those pushes stay
 * dead), of the same token kind, and has no event later than the rotation. In the same statement,
 * so that no snapshot (a fan-out's) sees both tokens live and hers: a job makes a push for one of
 * them only, and the pusher sends one made for `o` to the end of its replaced_by chain
 * (delivery-ledger.ts). A live `o` is invalidated 'replaced' at the rotation's time; one already
 * dead (a provider's 410 came first) keeps its time and reason. Its last event stays: a register of
 * `o` stamped after the rotation revives it (and clears replaced_by), one before it is stale against
 * the invalidation. A rotation whose register is stale (older than the new device's last event)
 * links nothing: it did not apply.
 *
 * replaced_by is set only when the new token was no live device before this statement, hers or
 * another user's (read from the statement's snapshot, which does not see `up`'s writes): else jobs
 * since it went live made pushes for it and for `o` alike (hers; a broadcast, whoever held it),
 * and moving `o`'s to it could send a job twice there; `o`
 * then keeps the link it had (null while it was live; the same register delivered again, or a later
 * register still naming `o`, must not undo the link its first delivery made). `o` is never one of
 * the statement's own devices (a row is modified once per statement): inEventOrder puts `o`'s events
 * in other rounds; the check keeps a register naming its own token as previousToken a plain register.
 * It returns each `o` it changed, as a topic's device member is named (deviceMemberId), with the new
 * token's member id and the rotation's time (replacedMembershipsSql).
 */
const replacedLinkSql = sql`
      update devices o set
        invalidated_at = coalesce(o.invalidated_at, least(i.event_at, now())),
        invalidation_reason = case when o.invalidated_at is null then 'replaced' else o.invalidation_reason end,
        replaced_by = case when f.fresh then up.id else o.replaced_by end,
        -- When written (clock_timestamp): the rows are locked by then (upsertStatement), only the topics of its memberships may still be waited for.
        replaced_at = case when f.fresh then clock_timestamp() else o.replaced_at end,
        replaced_xid = case when f.fresh then pg_current_xact_id() else o.replaced_xid end,
        updated_at = now()
      from i join up on (up.app, up.platform, up.token) = (i.app, i.platform, i.token)
      cross join lateral (select not exists (select 1 from devices p where p.app = i.app and p.platform = i.platform and p.token = i.token
          and p.invalidated_at is null) as fresh) f
      where i.previous_token is not null and (o.app, o.platform, o.token) = (i.app, i.platform, i.previous_token)
        -- Nothing to change (the rotation sent again, an app naming its previous token on every start): the row
        -- is left as it is, so its updated_at does not keep it from the dead-device prune for ever.
        and (o.invalidated_at is null or (f.fresh and o.replaced_by is distinct from up.id))
        and up.user_id = i.user_id and up.invalidated_at is null
        and o.user_id = i.user_id and o.invalidation_reason is distinct from 'unregistered'
        and o.token_kind = up.token_kind
        and o.last_event_at <= i.event_at
        and not exists (select 1 from i j where (j.app, j.platform, j.token) = (o.app, o.platform, o.token))
      returning o.app, o.platform || ':' || o.token as old_member, o.platform || ':' || up.token as new_member, i.event_at`;

/**
 * After `link`, in the same statement: each old token `o` that `link` changed hands its topic
 * memberships to the new token, so topic pushes reach the phone without the app subscribing again.
 * Every subscribed device membership of `o` ('<platform>:<token>', deviceMemberId) becomes one of the new token,
 * written as applyTopicMemberships writes a subscribe (topic-store.ts): stamped with the rotation's
 * event time (not the old membership's: the copy is an event of the new token, so its own later
 * events win, and its own earlier ones delivered late are stale after it), applied now, this
 * transaction in changed_xid when it joins or flips (a topic fan-out already running leaves it out,
 * as any member changed since it started: a push it made for `o` follows replaced_by, and one that
 * reads `o` after the rotation reads it as the new token, audience-stream.ts topicDevices). The
 * new token's own membership event later than the rotation (laterEventSql) is not overwritten. An
 * unsubscribed membership of `o` is not copied, and `o`'s rows stay as they are: `o` is dead, so a
 * fan-out started after the rotation skips them; an unsubscribe naming `o` delivered after the rotation changes `o`'s row only;
 * a register reviving `o` finds them. Only topics that exist, and none deleted at or after the
 * rotation's time (topic_deletions): a deleted topic's leftover rows are not brought back. The topics
 * are locked first, in the order membership batches lock them (app, name), then the member rows in
 * theirs (app, topic, member kind, member id), after the devices: no deadlock with a membership
 * batch, or with an erasure (devices, topics, members in that order; an erased `o` has no user, so
 * `link` leaves it alone).
 */
const replacedMembershipsSql = sql`
    , link_topics as (
      select t.app, t.name from topics t
      where (t.app, t.name) in (select m.app, m.topic from link l join topic_members m on m.app = l.app and m.member_kind = 'device'
          and m.member_id = l.old_member and m.subscribed)
      order by t.app, t.name
      for no key update
    ), link_members as (
      insert into topic_members as m (app, topic, member_kind, member_id, subscribed, event_at, changed_xid, event_applied_at)
      select l.app, om.topic, 'device'::text, l.new_member, true, l.event_at, pg_current_xact_id(), now()
      from link l
      join topic_members om on om.app = l.app and om.member_kind = 'device' and om.member_id = l.old_member and om.subscribed
      join link_topics t on t.app = om.app and t.name = om.topic
      where not exists (select 1 from topic_deletions d where d.app = om.app and d.topic = om.topic and l.event_at <= d.deleted_at)
      order by 1, 2, 3, 4 -- after the topics, the membership writers' lock order
      on conflict (app, topic, member_kind, member_id) do update set subscribed = true, event_at = excluded.event_at,
        event_ahead_mark = ${aheadMarkSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`m.event_ahead_mark`)},
        event_applied_at = ${appliedAtSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`excluded.event_applied_at`)},
        changed_xid = case when m.subscribed then m.changed_xid else excluded.changed_xid end
      where ${laterEventSql(sql`excluded.event_at`, sql`m.event_at`, sql`m.event_applied_at`, sql`m.event_ahead_mark`)}
    )`;

/**
 * Upserts at most one event per device; returns the devices whose row changed. A batch naming
 * previous tokens also changes their rows (replacedLinkSql), after the upsert has locked its own:
 * so that it takes every row in the one key order of all writers (a registrar batch naming both
 * tokens, an erasure), it first locks all of them in that order, in the upsert's transaction.
 */
async function upsertStatement(db: Kysely<HeraldTables>, rows: readonly Registration[]): Promise<DeviceKey[]> {
  const previous = rows.flatMap((r) => (r.kind === 'register' && r.previousToken !== undefined ? [{ ...r, token: r.previousToken }] : []));
  if (previous.length === 0) return upsertOnce(db, rows, false);
  return db.transaction().execute(async (trx) => {
    const keys = [...rows, ...previous];
    await sql`
      select 1 from devices d
      join unnest(${keys.map((k) => k.app)}::text[], ${keys.map((k) => k.platform)}::text[], ${keys.map((k) => k.token)}::text[]) as k(app, platform, token)
        on d.app = k.app and d.platform = k.platform and d.token = k.token
      order by d.app, d.platform, d.token
      for update of d`.execute(trx);
    return upsertOnce(trx, rows, true);
  });
}

/** The upsert; `rotation`: a row names a previousToken, so the statement links (replacedLinkSql) and copies memberships. */
async function upsertOnce(db: Kysely<HeraldTables>, rows: readonly Registration[], rotation: boolean): Promise<DeviceKey[]> {
  const reg = (r: Registration) => (r.kind === 'register' ? r : undefined);
  const { rows: applied } = await sql<DeviceKey>`
    with i as (
      select * from unnest(
      ${rows.map((r) => r.app)}::text[], ${rows.map((r) => r.platform)}::text[], ${rows.map((r) => r.token)}::text[],
      ${rows.map((r) => r.userId ?? null)}::text[], ${rows.map((r) => reg(r)?.timezone ?? null)}::text[],
      ${rows.map((r) => reg(r)?.locale ?? null)}::text[], ${rows.map((r) => r.eventAt)}::timestamptz[],
      ${rows.map((r) => r.kind === 'register')}::boolean[], ${rows.map((r) => reg(r)?.tokenKind ?? null)}::text[],
      ${rows.map((r) => reg(r)?.keys?.p256dh ?? null)}::text[], ${rows.map((r) => reg(r)?.keys?.auth ?? null)}::text[],
      ${rows.map((r) => reg(r)?.applicationServerKey ?? null)}::text[],
      ${rows.map((r) => reg(r)?.appVersion ?? null)}::text[], ${rows.map((r) => reg(r)?.lastSeenAt ?? null)}::timestamptz[],
      ${rows.map((r) => reg(r)?.previousToken ?? null)}::text[]
      ) as u(app, platform, token, user_id, timezone, locale, event_at, is_register, token_kind, web_p256dh, web_auth, web_vapid_key, app_version, last_seen_at,
             previous_token)
    ), up as (
    insert into devices as d
      (app, platform, token, token_kind, user_id, timezone, locale, registered_at, last_event_at, invalidated_at, invalidation_reason,
       web_p256dh, web_auth, web_vapid_key, app_version, last_seen_at, event_applied_at)
    -- An unregister's user (given to scope it, below) is not stored: a tombstone has no user.
    select i.app, i.platform, i.token, coalesce(i.token_kind, 'device'), case when i.is_register then i.user_id end, i.timezone, i.locale,
           case when i.is_register then least(i.event_at, now()) end,
           i.event_at,
           case when i.is_register then null else least(i.event_at, now()) end,
           case when i.is_register then null else 'unregistered' end,
           i.web_p256dh, i.web_auth,
           -- A web register that does not name its applicationServerKey: the same subscription reported again (same
           -- endpoint and keys, e.g. on every page load) keeps the key it was recorded with; a new one subscribed with
           -- the app's current key: record it now, so after a rotation the pusher still signs with that (then previous)
           -- pair. NULL: the app had no keys of its own, so the web-pusher's process pair signs it, also after the app gets keys.
           case when i.web_vapid_key is not null then i.web_vapid_key
                when same.found then same.web_vapid_key
                when i.is_register and i.platform = 'web' then (select a.web_vapid_public_key from apps a where a.id = i.app) end,
           i.app_version, case when i.is_register then least(coalesce(i.last_seen_at, i.event_at), now()) end,
           now()
    from i
    left join lateral (
      select true as found, s.web_vapid_key from devices s
      where s.app = i.app and s.platform = i.platform and s.token = i.token and s.web_p256dh = i.web_p256dh and s.web_auth = i.web_auth
    ) same on i.is_register and i.platform = 'web'
    order by i.app, i.platform, i.token -- one lock order for every batch: no deadlocks
    on conflict (app, platform, token) do update set
      user_id = case when excluded.registered_at is null then d.user_id else excluded.user_id end,
      -- A register without a timezone or locale (not given, or dropped by the registrar as invalid) keeps the
      -- device's: set to NULL, a 09:00-local digest went out at 09:00 UTC.
      timezone = case when excluded.registered_at is null then d.timezone else coalesce(excluded.timezone, d.timezone) end,
      locale = case when excluded.registered_at is null then d.locale else coalesce(excluded.locale, d.locale) end,
      -- A register that does not name its token kind keeps the device's (the row as locked): a refresh on start
      -- without it made a VoIP token 'device', which got alerts under the bundle id, DeviceTokenNotForTopic, and
      -- was invalidated. A new device is 'device' (the insert's value).
      token_kind = case when excluded.registered_at is null then d.token_kind
        else coalesce((select i.token_kind from i where i.app = d.app and i.platform = d.platform and i.token = d.token), d.token_kind) end,
      -- A web register replaces the subscription's keys (a browser may resubscribe with new ones at the same endpoint).
      web_p256dh = case when excluded.registered_at is null then d.web_p256dh else excluded.web_p256dh end,
      web_auth = case when excluded.registered_at is null then d.web_auth else excluded.web_auth end,
      web_vapid_key = case when excluded.registered_at is null then d.web_vapid_key else excluded.web_vapid_key end,
      -- Segment attributes (migration 0020): a register reports them (one without an app version keeps the
      -- device's, as for the timezone: a segment on appVersion lost the device); last_seen_at never moves back.
      app_version = case when excluded.registered_at is null then d.app_version else coalesce(excluded.app_version, d.app_version) end,
      last_seen_at = case when excluded.registered_at is null then d.last_seen_at else greatest(d.last_seen_at, excluded.last_seen_at) end,
      -- A register revives a replaced token (replacedLinkSql): its pushes are its own again. An unregister keeps the link.
      replaced_by = case when excluded.registered_at is null then d.replaced_by else null end,
      replaced_at = case when excluded.registered_at is null then d.replaced_at else null end,
      replaced_xid = case when excluded.registered_at is null then d.replaced_xid else null end,
      -- The same register delivered again (sameRegister) keeps when it was first registered: moved to the
      -- redelivery, a 410 from between the two would read stale against a fast clock's registration.
      registered_at = case when ${sameRegister} then d.registered_at else coalesce(excluded.registered_at, d.registered_at) end,
      user_changed_at = case when excluded.registered_at is not null and d.user_id is distinct from excluded.user_id then now() else d.user_changed_at end,
      event_ahead_mark = ${aheadMarkSql(sql`excluded.last_event_at`, sql`d.last_event_at`, sql`coalesce(d.event_applied_at, d.updated_at)`, sql`d.event_ahead_mark`)},
      event_applied_at = ${appliedAtSql(sql`excluded.last_event_at`, sql`d.last_event_at`, sql`coalesce(d.event_applied_at, d.updated_at)`, sql`excluded.event_applied_at`)},
      -- A register its user has signed out of since (signedOutAt, read once: each call of the volatile
      -- function reads what has committed by then): stored as that sign-out.
      (last_event_at, invalidated_at, invalidation_reason) = (
        select coalesce(x.signed_out_at, excluded.last_event_at),
          case when ${signOutOfDead} or (excluded.last_event_at = d.last_event_at and excluded.invalidated_at is not null and d.invalidated_at is not null)
            then d.invalidated_at when x.signed_out_at is not null then least(x.signed_out_at, now()) else excluded.invalidated_at end,
          case when ${signOutOfDead} then d.invalidation_reason when x.signed_out_at is not null then 'unregistered' else excluded.invalidation_reason end
        from (select ${signedOutAt} as signed_out_at) x),
      updated_at = now()
    -- Later than the device's last event (later-event.ts), and (clamped, above) not before its invalidation.
    -- Rows from before migration 0029 were applied no later than their updated_at.
    where ${laterEventSql(sql`excluded.last_event_at`, sql`d.last_event_at`, sql`coalesce(d.event_applied_at, d.updated_at)`, sql`d.event_ahead_mark`)}
      -- An unregister naming its user applies only while the device (the row as locked) is still that user's.
      and not exists (select 1 from i where i.app = d.app and i.platform = d.platform and i.token = d.token
        and not i.is_register and i.user_id is not null and i.user_id is distinct from d.user_id)
      and coalesce(case when ${sameRegister} then d.registered_at end, excluded.registered_at, excluded.invalidated_at) >= coalesce(d.invalidated_at, '-infinity'::timestamptz)
    returning d.id, d.app, d.platform, d.token, d.token_kind, d.user_id, d.last_seen_at, d.registered_at, d.invalidated_at
    ), touched as (
      -- A follower's device activity moves them forward in the recently-active follower indexes (0020).
      ${followerActivitySql(sql`(select app, user_id, last_seen_at as at from up where invalidated_at is null and registered_at is not null)`)}
    )${rotation ? sql`, link as (${replacedLinkSql})${replacedMembershipsSql}` : sql``}
    select app, platform, token from up`.execute(db);
  return applied;
}
