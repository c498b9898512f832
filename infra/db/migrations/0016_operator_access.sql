-- Operator access (issue 17): operator keys in the existing key store, and an audit log of
-- every write action an operator takes (parked replay and purge, app and key administration).

-- A key is a team key (the HTTP API's /v1 routes, scoped to `apps`) or an operator key (the
-- monitor's dashboard and its write actions, the admin routes). The two never stand in for each
-- other. For an operator key `team` holds the operator's name and `apps` is empty.
ALTER TABLE api_keys
  ADD COLUMN kind text NOT NULL DEFAULT 'team' CHECK (kind IN ('team', 'operator')),
  DROP CONSTRAINT api_keys_apps_check,
  ADD CONSTRAINT api_keys_apps_by_kind CHECK (
    (kind = 'team' AND cardinality(apps) > 0) OR (kind = 'operator' AND cardinality(apps) = 0)
  );

-- One row per write action: written as 'started' before the action runs (no row, no action),
-- finished with its outcome and result (counts, refusals) afterwards. `actor_kind` says which
-- credential acted: an operator key (actor_id = key id, actor_name = the operator's name), the
-- API's bootstrap HERALD_ADMIN_KEY, or the CLI (actor_id = OS user@host: the CLI reaches
-- RabbitMQ and PostgreSQL with their own credentials). `request` never holds a secret.
CREATE TABLE audit_log (
  id          bigserial   PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor_kind  text        NOT NULL CHECK (actor_kind IN ('operator', 'admin-key', 'cli')),
  actor_id    text        NOT NULL,
  actor_name  text        NOT NULL,
  action      text        NOT NULL,
  target      text        NOT NULL,
  request     jsonb       NOT NULL DEFAULT '{}',
  outcome     text        NOT NULL DEFAULT 'started' CHECK (outcome IN ('started', 'ok', 'refused', 'failed')),
  result      jsonb       NULL,
  finished_at timestamptz NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
