-- Apps as data with their own credentials, team API keys, and what the HTTP API needs to
-- accept jobs once and report their status (issue 7). One migration so its number stays 0008.

-- Per-app provider credentials. Non-secret parts are plain columns; the secret part of each
-- platform (the .p8 key, the certificate's private key, the service-account JSON, the access
-- token) is one AES-256-GCM envelope ("v1.<iv>.<tag>.<ciphertext>", base64url, the app id and
-- platform as associated data) made with HERALD_SECRET_KEY; see libs/db/src/secret-box.ts.
-- credentials_version grows on every credential change; pushers rebuild a provider when it moves.
ALTER TABLE apps
  ADD COLUMN apns_auth           text    NULL CHECK (apns_auth IN ('token', 'certificate')),
  ADD COLUMN apns_key_id         text    NULL CHECK (apns_key_id IS NULL OR length(apns_key_id) BETWEEN 1 AND 64),
  ADD COLUMN apns_team_id        text    NULL CHECK (apns_team_id IS NULL OR length(apns_team_id) BETWEEN 1 AND 64),
  -- production: api.push.apple.com, development: api.sandbox.push.apple.com, local: Herald's sandbox.
  ADD COLUMN apns_endpoint       text    NOT NULL DEFAULT 'development' CHECK (apns_endpoint IN ('production', 'development', 'local')),
  ADD COLUMN apns_secret         text    NULL,
  ADD COLUMN fcm_auth            text    NULL CHECK (fcm_auth IN ('service-account', 'access-token')),
  -- google: fcm.googleapis.com, local: Herald's sandbox.
  ADD COLUMN fcm_endpoint        text    NOT NULL DEFAULT 'google' CHECK (fcm_endpoint IN ('google', 'local')),
  ADD COLUMN fcm_secret          text    NULL,
  ADD COLUMN credentials_version integer NOT NULL DEFAULT 0,
  ADD CONSTRAINT apps_apns_secret_complete CHECK ((apns_auth IS NULL) = (apns_secret IS NULL)),
  ADD CONSTRAINT apps_apns_token_ids CHECK (apns_auth IS DISTINCT FROM 'token' OR (apns_key_id IS NOT NULL AND apns_team_id IS NOT NULL)),
  ADD CONSTRAINT apps_fcm_secret_complete CHECK ((fcm_auth IS NULL) = (fcm_secret IS NULL)),
  ADD CONSTRAINT apps_fcm_project_with_credentials CHECK (fcm_auth IS NULL OR fcm_project_id IS NOT NULL);

-- Team API keys for the HTTP API. Only the SHA-256 of a key is stored (keys are 32 random
-- bytes, so a plain hash is enough); `apps` lists the apps the key may act for ('*' = all).
CREATE TABLE api_keys (
  id         text        PRIMARY KEY,
  team       text        NOT NULL CHECK (length(team) BETWEEN 1 AND 100),
  key_hash   text        NOT NULL UNIQUE,
  apps       text[]      NOT NULL CHECK (cardinality(apps) > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz NULL
);

-- One row per job id: the idempotency record and the job-level status. The API inserts it
-- (ON CONFLICT DO NOTHING) before publishing and sets published_at after RabbitMQ confirmed;
-- the demuxer upserts it with how many device pushes the job fanned out to.
CREATE TABLE jobs (
  id            text        PRIMARY KEY,
  app           text        NOT NULL,
  team          text        NULL,
  accepted_at   timestamptz NOT NULL DEFAULT now(),
  published_at  timestamptz NULL,
  targeted      integer     NULL,
  demux_outcome text        NULL,
  demuxed_at    timestamptz NULL
);
CREATE INDEX jobs_accepted_at ON jobs (accepted_at);

-- The final outcome of each device push of a job (delivered, invalid, expired, parked), written
-- by the pushers keyed by push_id, so a redelivered push overwrites rather than double counts.
CREATE TABLE push_outcomes (
  push_id    uuid        PRIMARY KEY,
  job_id     text        NOT NULL,
  outcome    text        NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_outcomes_job_id ON push_outcomes (job_id);
