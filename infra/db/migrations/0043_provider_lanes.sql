-- Provider lanes the pushers take to be down (docs/adr/0020-provider-lanes.md), for the monitor's
-- provider-down alarm: a lane down holds its pushes unsent and acks them into the delay queues,
-- so no queue alarm sees an outage, and the monitor reads it here.
--
-- Each pusher judges its lanes itself (provider-lanes.ts, in process), so a row is one pusher's
-- (its instance, as its ledger claims name it: "apns-pusher@host:pid") and one of its lanes: a
-- row per service and lane would be overwritten by whichever replica wrote last, one that took the
-- lane down and one that never sent on it disagreeing. A pusher writes a row when it takes a lane
-- down and refreshes it every half minute while the lane stays down (lane-state-recorder.ts),
-- never per push, and deletes it when the lane answers again. Times are PostgreSQL's clock:
-- down_since is clock_timestamp() less how long the pusher has held the lane down (by its own
-- monotonic clock), seen_at the write's clock_timestamp(). A row whose pusher died or stopped
-- is no longer refreshed: the monitor leaves out rows not seen for three refreshes, and every
-- pusher's write deletes rows not seen for a day.
CREATE TABLE IF NOT EXISTS provider_lanes (
  instance   text        NOT NULL CHECK (length(instance) BETWEEN 1 AND 300),
  platform   text        NOT NULL CHECK (platform IN ('apns', 'fcm', 'web')),
  lane       text        NOT NULL CHECK (length(lane) BETWEEN 1 AND 400),
  down_since timestamptz NOT NULL,
  seen_at    timestamptz NOT NULL,
  PRIMARY KEY (instance, platform, lane)
);
