import { sql } from 'kysely';
import type { Database } from './database.ts';
import { toAudienceDevice, type AudienceDevice, type AudienceDeviceRow } from './device-targets.ts';
import { deviceColumns } from './audience-stream-devices.ts';
import type { PlannedDevices } from './fanout-repository.ts';

export interface PlannedDevicesRequest {
  app: string;
  category: string;
  objectId?: string;
  now: Date;
  planned: PlannedDevices;
}

/**
 * The devices a fan-out chunk planned pushes for, read again by id for a chunk redone after a
 * redelivery: the same devices in the same order, each addressed to the user it was planned for
 * (whose opt-outs and mutes decide its skip reason now), whatever the audience holds today. A
 * device invalidated since is still there (the pusher's claim finds it dead); one whose row is gone
 * is listed in `gone`.
 */
export async function readPlannedDevices(db: Database, req: PlannedDevicesRequest): Promise<{ devices: AudienceDevice[]; gone: string[] }> {
  const { deviceIds, userIds, toDevice } = req.planned;
  if (deviceIds.length === 0) return { devices: [], gone: [] };
  const ctx = { db: db.kysely, app: req.app, category: req.category, objectId: req.objectId ?? null, segment: undefined, now: req.now };
  const { rows } = await sql<Partial<AudienceDeviceRow> & { planned_id: string; planned_user: string; to_device: boolean }>`
    select p.device_id::text as planned_id, p.user_id as planned_user, p.to_device, ${deviceColumns(ctx, sql.ref('p.user_id'))}
    from unnest(${deviceIds}::bigint[], ${userIds}::text[], ${toDevice}::boolean[]) with ordinality as p(device_id, user_id, to_device, ord)
    left join devices d on d.id = p.device_id and d.app = ${req.app}
    order by p.ord`.execute(db.kysely);
  const devices: AudienceDevice[] = [];
  const gone: string[] = [];
  for (const r of rows) {
    if (r.id === undefined || r.id === null) {
      gone.push(r.planned_id);
      continue;
    }
    devices.push({ ...toAudienceDevice(r as AudienceDeviceRow), userId: r.planned_user, ...(r.to_device && { toDevice: true as const }) });
  }
  return { devices, gone };
}

/** What a chunk records of the devices it plans pushes for (PlannedDevices), in their order. */
export function plannedOf(devices: readonly AudienceDevice[]): PlannedDevices {
  return { deviceIds: devices.map((d) => d.deviceId), userIds: devices.map((d) => d.userId), toDevice: devices.map((d) => d.toDevice === true) };
}
