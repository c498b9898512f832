-- Opt-outs and mutes per app (issue 17). Until now one opt-out silenced every app a user has;
-- a team's API key must only change what its own apps send. Existing rows keep their meaning:
-- app NULL = every app. New rows name their app (the HTTP API always does; the CLI needs --app,
-- or --all-apps for an operator's opt-out from everything).
ALTER TABLE opt_outs ADD COLUMN app text NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE opt_outs DROP CONSTRAINT opt_outs_pkey;
-- Per app: one row per (user, category, app). Also the targeting lookup's index (user_id, category).
ALTER TABLE opt_outs ADD CONSTRAINT opt_outs_user_category_app_key UNIQUE (user_id, category, app);
-- Every app: at most one row per (user, category) (a plain UNIQUE lets NULLs repeat).
CREATE UNIQUE INDEX opt_outs_every_app_key ON opt_outs (user_id, category) WHERE app IS NULL;

ALTER TABLE mutes ADD COLUMN app text NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE mutes DROP CONSTRAINT mutes_pkey;
ALTER TABLE mutes ADD CONSTRAINT mutes_user_object_app_key UNIQUE (user_id, object_id, app);
CREATE UNIQUE INDEX mutes_every_app_key ON mutes (user_id, object_id) WHERE app IS NULL;

-- A user's devices, valid and invalidated (GET /v1/devices, `herald devices`); the older index
-- covers only valid ones. Built inside the migration's transaction, which blocks writes to devices
-- while it builds: on a large table, build it first with CREATE INDEX CONCURRENTLY (same name).
CREATE INDEX IF NOT EXISTS devices_by_app_user ON devices (app, user_id);
