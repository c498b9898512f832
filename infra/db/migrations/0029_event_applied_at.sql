-- When each kept event was applied (the database's clock), beside the reporter's event time.
-- Last event wins by the reporter's clock, so an event stamped far ahead (a phone a day fast)
-- beat every later event from a right clock until real time caught up: a logout or another
-- user's login on that phone was stale, and the first user's pushes went on reaching the phone.
-- With the time it was applied, a stored time later than that by more than the clock-skew
-- allowance is known to be from a clock running ahead, and an event from a plausible clock that
-- happened after it was applied wins (device-registration.ts, later-event.ts). The highest such
-- fast-clock time overruled so far is kept too (event_ahead_mark): that clock's earlier events,
-- delivered again, stay stale. Nullable, no default: no table rewrite; rows from before compare
-- as they did (devices by updated_at).
ALTER TABLE devices ADD COLUMN IF NOT EXISTS event_applied_at timestamptz NULL;
ALTER TABLE topic_members ADD COLUMN IF NOT EXISTS event_applied_at timestamptz NULL;
ALTER TABLE follows ADD COLUMN IF NOT EXISTS event_applied_at timestamptz NULL;
ALTER TABLE devices ADD COLUMN IF NOT EXISTS event_ahead_mark timestamptz NULL;
ALTER TABLE topic_members ADD COLUMN IF NOT EXISTS event_ahead_mark timestamptz NULL;
ALTER TABLE follows ADD COLUMN IF NOT EXISTS event_ahead_mark timestamptz NULL;
