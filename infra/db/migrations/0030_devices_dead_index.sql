-- Devices whose token a provider declared dead are pruned once nothing has changed them for
-- DEVICE_RETENTION_DAYS (libs/db/src/device-prune.ts, run by the registrar; an unregister's
-- tombstone is kept). The prune reads them oldest change first, a batch at a time; without this
-- index each batch would scan the whole table. Partial: live devices, the targeting queries' rows,
-- and tombstones are not in it.
-- Building it blocks writes to devices (registrations and invalidations wait in their queues) but
-- not reads (targeting goes on). On a large table, build it beforehand without blocking writes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_dead_by_updated_at ON devices (updated_at) WHERE invalidated_at IS NOT NULL AND invalidation_reason <> 'unregistered';
-- and this migration then finds it and does nothing.
CREATE INDEX IF NOT EXISTS devices_dead_by_updated_at ON devices (updated_at) WHERE invalidated_at IS NOT NULL AND invalidation_reason <> 'unregistered';
