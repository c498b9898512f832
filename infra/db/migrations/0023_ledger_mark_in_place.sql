-- Marking a ledger entry done (complete) as an in-place (HOT) update: PostgreSQL writes no new
-- index entries for an update that changes no indexed column and fits on the row's page. Before,
-- state and completed_at were both indexed (delivery_ledger_completed_at, and the predicate of
-- delivery_ledger_sending_claimed_at), so every push wrote a second heap tuple plus new primary-key
-- and completed_at entries when it was marked done. Pruning now walks one index on claimed_at
-- (ledger-prune.ts: an entry is pruned once it was both claimed and, if done, completed before the
-- horizon), which the mark leaves alone, and new pages keep 30% free for the marked versions.
--
-- On a large ledger the index build below blocks the ledger's writes (pushers wait) for as long as
-- it takes; build it beforehand without blocking, and this migration then only drops the old two:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS delivery_ledger_claimed_at ON delivery_ledger (claimed_at);
ALTER TABLE delivery_ledger SET (fillfactor = 70);
CREATE INDEX IF NOT EXISTS delivery_ledger_claimed_at ON delivery_ledger (claimed_at);
DROP INDEX delivery_ledger_completed_at;
DROP INDEX delivery_ledger_sending_claimed_at;
