-- When a device last changed hands: set by a register that names another user than the row's.
-- A fan-out chunk looks for devices that moved from a member already read to one it reads (a
-- shared phone logging in as another follower) among the devices earlier chunks planned; only
-- devices that changed hands since the fan-out started can be there, and updated_at (every
-- register, each app launch) would have it look on nearly every chunk. Nullable, no default: no
-- table rewrite; rows from before count as never having changed hands.
ALTER TABLE devices ADD COLUMN IF NOT EXISTS user_changed_at timestamptz NULL;
