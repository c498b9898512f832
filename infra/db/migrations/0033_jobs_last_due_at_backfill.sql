-- 0032 added jobs.last_due_at empty. A job whose pushes were stored for later before it was there
-- kept NULL and so was pruned by accepted_at alone: one accepted over JOB_RETENTION_DAYS ago lost
-- its status (GET 404, DELETE unable to cancel) within the hour after its pushes were released,
-- while they were still being sent. Set it from what is still stored. A demuxer of a release
-- before 0032 that stores pushes after this has run (during a rolling upgrade) leaves its jobs
-- NULL: upgrade the demuxers first, or run this statement again once they are.
-- Rows are locked in id order, as every statement on jobs locks them (the store's raiseLastDue
-- among them): an upgrade commits each migration on its own, so this runs beside live traffic, not
-- under 0032's table lock, and an UPDATE … FROM locking in join order could deadlock with them.
WITH latest AS (
  SELECT job_id, max(due_at) AS latest FROM scheduled_pushes GROUP BY job_id
), target AS (
  SELECT j.id, latest.latest FROM jobs j JOIN latest ON latest.job_id = j.id
  WHERE j.last_due_at IS NULL OR j.last_due_at < latest.latest
  ORDER BY j.id
  FOR NO KEY UPDATE OF j
)
UPDATE jobs j
SET last_due_at = greatest(j.last_due_at, target.latest)
FROM target
WHERE j.id = target.id;
