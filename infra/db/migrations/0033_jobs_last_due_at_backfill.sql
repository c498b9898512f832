-- 0032 added jobs.last_due_at empty. A job whose pushes were stored for later before it was there
-- kept NULL and so was pruned by accepted_at alone: one accepted over JOB_RETENTION_DAYS ago lost
-- its status (GET 404, DELETE unable to cancel) within the hour after its pushes were released,
-- while they were still being sent. Set it from what is still stored. A demuxer of a release
-- before 0032 that stores pushes after this has run (during a rolling upgrade) leaves its jobs
-- NULL: upgrade the demuxers first, or run this statement again once they are.
UPDATE jobs j
SET last_due_at = s.latest
FROM (SELECT job_id, max(due_at) AS latest FROM scheduled_pushes GROUP BY job_id) s
WHERE j.id = s.job_id AND (j.last_due_at IS NULL OR j.last_due_at < s.latest);
