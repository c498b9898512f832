import { sql, type Kysely } from 'kysely';
import type { Registration } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { deviceKey, pickOnePerDevice, type DeviceKey } from './device-key.ts';

export type RegistrationResult = 'applied' | 'stale';

/**
 * Apply register/unregister events in one statement. Last event time wins: an event older than
 * the device's last event (or than its invalidation) changes nothing and is 'stale'. Within one
 * batch, the newest event per device is applied and the others report 'stale' (superseded).
 */
export async function applyRegistrations(db: Kysely<HeraldTables>, regs: readonly Registration[]): Promise<RegistrationResult[]> {
  const results: RegistrationResult[] = regs.map(() => 'stale');
  if (regs.length === 0) return results;
  const winners = pickOnePerDevice(regs, (a, b) => Date.parse(a.eventAt) > Date.parse(b.eventAt));
  const applied = await upsertStatement(
    db,
    winners.map((i) => regs[i] as Registration),
  );
  const appliedKeys = new Set(applied.map(deviceKey));
  for (const i of winners) {
    if (appliedKeys.has(deviceKey(regs[i] as Registration))) results[i] = 'applied';
  }
  return results;
}

/** Upserts at most one event per device; returns the devices whose row changed. */
async function upsertStatement(db: Kysely<HeraldTables>, rows: readonly Registration[]): Promise<DeviceKey[]> {
  const reg = (r: Registration) => (r.kind === 'register' ? r : undefined);
  const { rows: applied } = await sql<DeviceKey>`
    insert into devices as d
      (app, platform, token, token_kind, user_id, timezone, locale, registered_at, last_event_at, invalidated_at, invalidation_reason)
    select i.app, i.platform, i.token, coalesce(i.token_kind, 'device'), i.user_id, i.timezone, i.locale,
           case when i.is_register then i.event_at end,
           i.event_at,
           case when i.is_register then null else i.event_at end,
           case when i.is_register then null else 'unregistered' end
    from unnest(
      ${rows.map((r) => r.app)}::text[], ${rows.map((r) => r.platform)}::text[], ${rows.map((r) => r.token)}::text[],
      ${rows.map((r) => reg(r)?.userId ?? null)}::text[], ${rows.map((r) => reg(r)?.timezone ?? null)}::text[],
      ${rows.map((r) => reg(r)?.locale ?? null)}::text[], ${rows.map((r) => r.eventAt)}::timestamptz[],
      ${rows.map((r) => r.kind === 'register')}::boolean[], ${rows.map((r) => reg(r)?.tokenKind ?? null)}::text[]
    ) as i(app, platform, token, user_id, timezone, locale, event_at, is_register, token_kind)
    order by i.app, i.platform, i.token -- one lock order for every batch: no deadlocks
    on conflict (app, platform, token) do update set
      user_id = case when excluded.registered_at is null then d.user_id else excluded.user_id end,
      timezone = case when excluded.registered_at is null then d.timezone else excluded.timezone end,
      locale = case when excluded.registered_at is null then d.locale else excluded.locale end,
      token_kind = case when excluded.registered_at is null then d.token_kind else excluded.token_kind end,
      registered_at = coalesce(excluded.registered_at, d.registered_at),
      last_event_at = excluded.last_event_at,
      invalidated_at = excluded.invalidated_at,
      invalidation_reason = excluded.invalidation_reason,
      updated_at = now()
    where excluded.last_event_at >= greatest(d.last_event_at, d.invalidated_at)
    returning d.app, d.platform, d.token`.execute(db);
  return applied;
}
