-- Provider back-off shared by every pusher of a platform (docs/adr/0006-provider-back-off.md):
-- when APNs or FCM answers a push with Retry-After, the pusher that got it holds the push's app
-- back at once and writes "paused until" here; every other pusher reads the running pauses at
-- its limiter refresh (RATE_LIMIT_REFRESH_MS) and holds the app back too. paused_until is on the
-- database clock (written as clock_timestamp() + the delay, read back as the time left), so the
-- pushers' clocks need not agree. A pause only grows (greatest of the old and the new); a row
-- whose time has passed means nothing and is overwritten by the app's next pause (one row per
-- platform and app at most, so nothing to prune).
CREATE TABLE provider_pauses (
  platform     text        NOT NULL CHECK (platform IN ('apns', 'fcm', 'webhook')),
  app          text        NOT NULL CHECK (length(app) BETWEEN 1 AND 200),
  paused_until timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (platform, app)
);
