-- A chunk remembers the devices it planned pushes for (and for whom, and whether addressed to the
-- device itself), written with its counts. Redone after a redelivery, it plans exactly those
-- again instead of reading the audience a second time: a second read could differ (devices
-- invalidated, members gone or joined), so the pushes the first read counted and published were
-- not the ones the redo sent, and a job whose first attempt died before publishing kept pushes in
-- flight forever. A copy racing the first to plan the chunk plans the same devices, and a chunk
-- planned when its job was cancelled records those pushes as cancelled. Chunks planned before
-- this migration have none and are redone as before. Nullable, no default: no table rewrite.
ALTER TABLE fanout_chunks
  ADD COLUMN IF NOT EXISTS planned_devices bigint[] NULL,
  ADD COLUMN IF NOT EXISTS planned_users text[] NULL,
  ADD COLUMN IF NOT EXISTS planned_to_device boolean[] NULL;
