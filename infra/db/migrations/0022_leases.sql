-- Leases for work that must happen once in a fleet of N >= 2 (issue 18): the monitor's alarm
-- announcements (log line and webhook call). A holder renews its row well before expires_at; a
-- crashed holder's lease runs out and another instance takes it. Rows, not session advisory locks,
-- so the lease holds through PgBouncer in transaction mode and across a primary switch.
CREATE TABLE leases (
  name        text        PRIMARY KEY,
  holder      text        NOT NULL,
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
