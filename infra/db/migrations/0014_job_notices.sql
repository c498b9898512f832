-- Where Herald adapted a job to a provider's limits (for example an expiry further ahead than
-- FCM's 28-day maximum, capped for FCM devices), in sentences the job's status shows (issue 16).
-- Written by the demuxer with its outcome; empty for almost every job.
ALTER TABLE jobs ADD COLUMN notices text[] NOT NULL DEFAULT '{}';
