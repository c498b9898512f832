-- The alarms the monitor holding the alarms lease last announced as firing (log and webhook), one
-- row each until it announces them resolved. The next announcer (the monitor restarted, another
-- instance taking the lease) reads them: an alarm that ended while nobody announced is announced
-- resolved, one still firing is not announced a second time.
CREATE TABLE IF NOT EXISTS announced_alarms (
  alarm text NOT NULL,
  queue text NOT NULL,
  summary text NOT NULL,
  value double precision NOT NULL,
  threshold double precision NOT NULL,
  since timestamptz NOT NULL,
  fired_at timestamptz NOT NULL,
  PRIMARY KEY (alarm, queue)
);
