-- Expired mutes (until in the past) are deleted by the registrars (libs/db/src/mute-prune.ts), a
-- batch at a time, earliest expiry first; without this index each batch would scan the whole
-- table. Partial: mutes until removed (until NULL) are never pruned and are not in it.
-- Building it blocks writes to mutes (setting or clearing one waits) but not reads (targeting goes
-- on). On a large table, build it beforehand without blocking writes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS mutes_by_until ON mutes (until) WHERE until IS NOT NULL;
-- and this migration then finds it and does nothing.
CREATE INDEX IF NOT EXISTS mutes_by_until ON mutes (until) WHERE until IS NOT NULL;
