-- Outbound budgets shared by every pusher process: one row per platform (app = '') and,
-- optionally, per (platform, app). Operators set rate_per_sec at run time (`herald limits set`).
-- The same row is the fleet's lease state: the budget is split into short windows (the window
-- length is chosen by the limiter, 100 ms by default); window_index is the current window
-- (epoch ms / window length, on the database clock) and granted how many tokens pushers have
-- leased in it. A lease is one atomic UPDATE … RETURNING on this row (see rate-limit-repository.ts).
CREATE TABLE rate_limits (
  platform     text        NOT NULL CHECK (platform IN ('apns', 'fcm')),
  app          text        NOT NULL DEFAULT '' CHECK (length(app) <= 200),
  rate_per_sec integer     NOT NULL CHECK (rate_per_sec > 0),
  window_index bigint      NOT NULL DEFAULT 0,
  granted      integer     NOT NULL DEFAULT 0 CHECK (granted >= 0),
  last_grant   integer     NOT NULL DEFAULT 0 CHECK (last_grant >= 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (platform, app)
);
