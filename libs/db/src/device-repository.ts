import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Registration } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';
import { applyRegistrations, type RegistrationResult } from './device-registration.ts';
import { invalidateDevices, type InvalidationInput, type InvalidationResult } from './device-invalidation.ts';
import { findAudience, findTargets, type Audience, type TargetDevice, type TargetRequest } from './device-targets.ts';

/** Devices: registrations (last event wins), invalidations, and push targeting. */
export interface DeviceRepository {
  applyRegistration(reg: Registration): Promise<RegistrationResult>;
  /** One statement for the whole batch, one more for each further event of a device in it (applied in event-time order); results in input order. */
  applyRegistrations(regs: readonly Registration[]): Promise<RegistrationResult[]>;
  invalidate(inv: InvalidationInput): Promise<InvalidationResult>;
  /** One statement for the whole batch; results in input order. */
  invalidateMany(invs: readonly InvalidationInput[]): Promise<InvalidationResult[]>;
  /** One query for every request and user; see device-targets.ts. */
  findTargets(requests: readonly TargetRequest[], now: Date): Promise<Map<string, TargetDevice[]>>;
  /** findTargets plus the devices it leaves out for opt-outs and mutes, each with its reason; one query. */
  findAudience(requests: readonly TargetRequest[], now: Date): Promise<Audience>;
}

/** `pool`: the pool under `db`; with it, targeting (findAudience, findTargets) runs as a prepared statement. */
export function createDeviceRepository(db: Kysely<HeraldTables>, pool?: pg.Pool): DeviceRepository {
  return {
    applyRegistration: async (reg) => (await applyRegistrations(db, [reg]))[0] ?? 'stale',
    applyRegistrations: (regs) => applyRegistrations(db, regs),
    invalidate: async (inv) => (await invalidateDevices(db, [inv]))[0] ?? 'unknown',
    invalidateMany: (invs) => invalidateDevices(db, invs),
    findTargets: (requests, now) => findTargets(db, requests, now),
    findAudience: (requests, now) => findAudience(db, requests, now, pool),
  };
}
