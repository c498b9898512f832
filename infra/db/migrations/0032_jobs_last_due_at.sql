-- The latest due time of a push of the job stored for later (scheduled_pushes), raised by the
-- store before it inserts them (scheduled-push-repository.ts). Job status is kept
-- JOB_RETENTION_DAYS from the later of accepted_at and this (job-prune.ts): counted from
-- accepted_at alone, a job scheduled further ahead than the retention was deleted with its
-- outcomes within the hour after its pushes were released, while they were still being sent.
-- Nullable, no default: no table rewrite; a job with nothing stored for later keeps NULL.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS last_due_at timestamptz NULL;
