-- A job's first fan-out (the demuxer's): the snapshot its read of the users' devices saw, beside
-- demuxed_at, and kept by later fan-outs as demuxed_at is. A retry of the job (its message handled
-- again, or the job published again) reads a device whose token was replaced (migration 0045) as
-- the first fan-out did: by its old token when the link's transaction (devices.replaced_xid,
-- migration 0046) is not in this snapshot, the same push then (libs/db/src/device-targets.ts).
-- Before, it compared the link's time with demuxed_at, the record's time, and missed a rotation
-- committed between the read and the record, or written before the read and committed after it.
-- Null for a job recorded before this migration, or whose read found no device.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS demux_snapshot pg_snapshot NULL;
