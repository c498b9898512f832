-- Audience fan-outs (issue 20, docs/adr/0013-fan-out-stage.md). A job whose target is an audience
-- (a topic, the followers of a user, a segment or the whole app) is expanded in keyset chunks by
-- any number of demuxers; these tables are its checkpoint.
--
-- fanouts: one row per audience job. `job` is the validated PushJob (so a chunk task on push.fanout
-- carries only the job id and chunk number); state: expanding (chunks still to read), sending
-- (every chunk read, pushes on their way), done, cancelled. audience_size is counted once at the
-- start (exact, or an estimate for very large audiences).
CREATE TABLE fanouts (
  job_id        text        PRIMARY KEY,
  app           text        NOT NULL,
  audience      jsonb       NOT NULL,
  job           jsonb       NOT NULL,
  accepted_at   timestamptz NOT NULL,
  state         text        NOT NULL DEFAULT 'expanding' CHECK (state IN ('expanding', 'sending', 'done', 'cancelled')),
  audience_size bigint      NULL,
  size_exact    boolean     NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  cancelled_at  timestamptz NULL
);
-- The dashboard's running fan-outs.
CREATE INDEX fanouts_running ON fanouts (created_at) WHERE state IN ('expanding', 'sending');

-- fanout_chunks: the chain of chunks. Chunk k+1's row (with its start cursor) is inserted by the
-- demuxer that read chunk k, ON CONFLICT DO NOTHING, so a redelivered task cannot fork the chain.
-- after_cursor: the keyset position the chunk starts after (NULL: the beginning).
-- state: pending (not yet planned), planned (its targeted count and skip outcomes are written,
-- pushes being published), done (pushes confirmed or stored). Counts are per chunk, so
-- re-processing a chunk overwrites rather than adds.
CREATE TABLE fanout_chunks (
  job_id        text        NOT NULL REFERENCES fanouts (job_id) ON DELETE CASCADE,
  chunk_no      integer     NOT NULL,
  after_cursor  text        NULL,
  next_cursor   text        NULL,
  last_chunk    boolean     NOT NULL DEFAULT false,
  state         text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'planned', 'done')),
  devices       integer     NOT NULL DEFAULT 0,
  targeted      integer     NOT NULL DEFAULT 0,
  no_device     integer     NOT NULL DEFAULT 0,
  emitted       integer     NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, chunk_no)
);

-- A cancelled job (DELETE /v1/jobs/:id, herald job cancel): the pushers keep the recently
-- cancelled job ids in memory (refreshed from this index every few hundred ms) and drop their
-- pushes unsent, recorded as cancelled.
ALTER TABLE jobs ADD COLUMN cancelled_at timestamptz NULL;
CREATE INDEX jobs_cancelled_at ON jobs (cancelled_at) WHERE cancelled_at IS NOT NULL;
