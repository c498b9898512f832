-- push_outcomes keyed by (job_id, push_id): a push id belongs to one job (derivePushId(jobId,
-- deviceId)), so the pair is as unique as the push id alone, and the job's listing and counts
-- already read by it. One index instead of two: every outcome written (one a device push) inserts
-- one entry fewer, and not one at a random place in an index on a random uuid.
--
-- On a large table the index build below blocks writes of outcomes for as long as it takes;
-- build it beforehand without blocking, and this migration then only swaps the key:
--   CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS push_outcomes_job_push_key ON push_outcomes (job_id, push_id);
CREATE UNIQUE INDEX IF NOT EXISTS push_outcomes_job_push_key ON push_outcomes (job_id, push_id);
ALTER TABLE push_outcomes DROP CONSTRAINT push_outcomes_pkey;
ALTER TABLE push_outcomes ADD CONSTRAINT push_outcomes_pkey PRIMARY KEY USING INDEX push_outcomes_job_push_key;
DROP INDEX push_outcomes_job_push;
