-- Pushes waiting for their due time. The demuxer inserts; deschedulers claim due rows per
-- platform in due order with FOR UPDATE SKIP LOCKED, publish them, delete them and commit.
CREATE TABLE scheduled_pushes (
  id         bigserial   PRIMARY KEY,
  platform   text        NOT NULL CHECK (platform IN ('apns', 'fcm')),
  due_at     timestamptz NOT NULL,
  job_id     text        NOT NULL,
  -- One row per push: scheduling the same job twice stores each push once.
  push_id    uuid        NOT NULL UNIQUE,
  -- The DevicePush, published as is when due.
  payload    jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Deschedulers read the earliest due rows of their platform.
CREATE INDEX scheduled_pushes_platform_due_at ON scheduled_pushes (platform, due_at);
-- Cancelling a job removes its rows.
CREATE INDEX scheduled_pushes_job_id ON scheduled_pushes (job_id);
