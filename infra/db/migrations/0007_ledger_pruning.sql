-- Ledger pruning (see libs/db/src/ledger-prune.ts): the table stays one plain table and old
-- entries are deleted in bounded batches. 'done' entries go by completed_at (index from 0004);
-- 'sending' claims that were never completed (the push was dropped or parked after a crash)
-- go by claimed_at, through this small partial index.
CREATE INDEX delivery_ledger_sending_claimed_at ON delivery_ledger (claimed_at) WHERE state = 'sending';
