-- One row per (app, platform, token). The last event time wins: last_event_at is the event time
-- of the newest register/unregister applied, so a late older event changes nothing.
-- An unregister for an unknown token leaves a tombstone (user_id NULL, invalidated) so an older
-- register delivered later cannot resurrect it.
CREATE TABLE devices (
  id                  bigserial   PRIMARY KEY,
  app                 text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  platform            text        NOT NULL CHECK (platform IN ('apns', 'fcm')),
  token               text        NOT NULL CHECK (length(token) BETWEEN 1 AND 4096),
  user_id             text        NULL CHECK (user_id IS NULL OR length(user_id) BETWEEN 1 AND 200),
  timezone            text        NULL,
  locale              text        NULL,
  -- Event time of the last applied register; NULL for a tombstone.
  registered_at       timestamptz NULL,
  last_event_at       timestamptz NOT NULL,
  -- From when the token is known dead (unregister event time, or the provider's invalid-since).
  invalidated_at      timestamptz NULL,
  invalidation_reason text        NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT devices_app_platform_token_key UNIQUE (app, platform, token),
  CONSTRAINT devices_invalidation_complete CHECK ((invalidated_at IS NULL) = (invalidation_reason IS NULL)),
  CONSTRAINT devices_active_has_user CHECK (invalidated_at IS NOT NULL OR (user_id IS NOT NULL AND registered_at IS NOT NULL))
);

-- Target lookup: the active devices of a user of an app.
CREATE INDEX devices_active_by_app_user ON devices (app, user_id) WHERE invalidated_at IS NULL;
