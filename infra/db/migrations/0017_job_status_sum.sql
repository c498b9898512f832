-- Job status that adds up (issue 17): every device push a job addressed ends in exactly one
-- push_outcomes row (or is still in flight), so targeted = the sum of the outcomes + in flight.
-- New outcomes beside delivered / invalid / expired / parked: failed (the provider refused it for
-- good), cancelled (DELETE /v1/jobs/:id removed it while scheduled), opted-out and muted (the
-- demuxer skipped the device for its user's preferences). code: the park code (retries-exhausted,
-- delivery-limit, app-disabled, ...) or the provider's reason; reason: the sentence or the
-- provider's answer; provider_message_id: apns-id / FCM message name of a delivered push.
-- platform and device_id say which device push it was (GET /v1/jobs/:id/pushes).
ALTER TABLE push_outcomes
  ADD COLUMN code                text NULL,
  ADD COLUMN reason              text NULL,
  ADD COLUMN provider_message_id text NULL,
  ADD COLUMN platform            text NULL,
  ADD COLUMN device_id           text NULL;
-- A job's pushes in push_id order: the listing's keyset and the status's count (replaces the
-- job_id index, which it covers).
CREATE INDEX push_outcomes_job_push ON push_outcomes (job_id, push_id);
DROP INDEX push_outcomes_job_id;

-- no_device: target users the demuxer found no device for (one each in targeted);
-- demux_reason: why the demuxer parked the job itself (demux_outcome 'parked: <code>').
ALTER TABLE jobs
  ADD COLUMN no_device    integer NULL,
  ADD COLUMN demux_reason text    NULL;

-- A job's scheduled pushes in push_id order too (the listing pages through them with the outcomes):
-- the job_id index widened rather than a second index, so storing a push still costs one entry.
CREATE INDEX scheduled_pushes_job_push ON scheduled_pushes (job_id, push_id);
DROP INDEX scheduled_pushes_job_id;
