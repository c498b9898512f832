-- Sign-outs that did not apply (libs/db/src/device-registration.ts): an unregister naming its
-- user applies only while the device is still that user's, so a sign-out that arrives before the
-- sign-in it follows (separate batches: registrar replicas, a retried batch, a replayed parked
-- message) found the device another user's, or a tombstone, and changed nothing. Kept here, per
-- device and user, the newest such sign-out: a register of that user stamped at or before it, arriving
-- later, applies as a sign-in followed by that sign-out (the device ends the user's tombstone, as
-- it would had the two come in order), never as a live device the user has signed out of.
--
-- A row goes (device-prune.ts, every prune round) with its device when the device is pruned, and
-- at the latest once its time is older than the device retention (DEVICE_RETENTION_DAYS; a sign-in
-- stamped before it and delivered later still then registers). Not as soon as the device's last
-- event passes it: a last event from a clock running ahead can lose to an older one
-- (later-event.ts), and the sign-out must still decide then. Erasing the user of the app deletes
-- the user's rows (user-erasure.ts), and the trigger below keeps out a sign-out of an erased user
-- from before the erasure, as for the user's other rows (migration 0040).
CREATE TABLE IF NOT EXISTS device_signouts (
  app           text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  platform      text        NOT NULL,
  token         text        NOT NULL,
  user_id       text        NOT NULL,
  signed_out_at timestamptz NOT NULL,
  -- When it was kept (this database's clock): a sign-out stamped further ahead of it than the clock
  -- allowance came from a clock running ahead, and does not hold back the user's sign-ins made since.
  kept_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app, platform, token, user_id)
);
-- An erasure looks up the user's rows of an app; the prune goes through them by age.
CREATE INDEX IF NOT EXISTS device_signouts_by_user ON device_signouts (app, user_id);
CREATE INDEX IF NOT EXISTS device_signouts_by_time ON device_signouts (signed_out_at);

DROP TRIGGER IF EXISTS device_signouts_erased_user ON device_signouts;
CREATE TRIGGER device_signouts_erased_user BEFORE INSERT OR UPDATE ON device_signouts
  FOR EACH ROW EXECUTE FUNCTION erased_user_guard('signed_out_at', 'user_id');

-- A register's user's newest kept sign-out of the device at or after the register's time, or NULL;
-- except one stamped more than p_allowance (the clock allowance) after it was kept, against a
-- register stamped since it was kept: a fast clock's sign-out must not turn the user's later real
-- sign-ins into tombstones until real time passes it (later-event.ts, the same rule for the devices'
-- own events). Called by the registrar's upsert, once a row, on the device row it has locked;
-- VOLATILE, so it reads with a snapshot of its own, taken then: a sign-out kept by a statement that
-- committed while the upsert waited for the row is seen (the statement's own snapshot, older, would not).
CREATE OR REPLACE FUNCTION herald_device_signed_out(p_app text, p_platform text, p_token text, p_user text, p_at timestamptz, p_allowance interval)
  RETURNS timestamptz LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
  RETURN (SELECT s.signed_out_at FROM device_signouts s
          WHERE s.app = p_app AND s.platform = p_platform AND s.token = p_token AND s.user_id = p_user AND s.signed_out_at >= p_at
            AND (s.signed_out_at <= s.kept_at + p_allowance OR p_at < s.kept_at));
END $$;
