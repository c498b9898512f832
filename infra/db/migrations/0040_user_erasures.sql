-- Erasing a user of an app (POST /v1/users:erase, herald erase-user; libs/db/src/user-erasure.ts).
--
-- One row per erased user of an app: the user id is not kept, only user_key = SHA-256 of the app
-- id, a NUL and the user id (herald_user_key below, erasureKey), and when the erasure was made
-- (PostgreSQL's clock). The triggers below read it to keep out a row of that user with an older
-- event time (a register, topic subscribe or follow delivered late, or replayed from a parked
-- queue), so an erasure is not undone by a message that was already on its way. An erasure made
-- again moves erased_at on.
CREATE TABLE IF NOT EXISTS user_erasures (
  app       text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  user_key  bytea       NOT NULL CHECK (length(user_key) = 32),
  erased_at timestamptz NOT NULL,
  PRIMARY KEY (app, user_key)
);

-- What an erasure looks up that no index served: a user's topic memberships (the primary key
-- leads with the topic), a user's follow edges whichever their state (follows_by_follower holds
-- only edges being followed). Building them blocks writes to topic_members and follows
-- (subscribing and following wait) but not reads (fan-outs go on). On large tables, build them
-- beforehand without blocking:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS topic_members_by_member ON topic_members (app, member_kind, member_id);
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS follows_by_follower_any ON follows (app, follower);
-- and this migration then finds them.
CREATE INDEX IF NOT EXISTS topic_members_by_member ON topic_members (app, member_kind, member_id);
CREATE INDEX IF NOT EXISTS follows_by_follower_any ON follows (app, follower);

-- The database itself keeps an erased user's older events out, whoever writes them (the
-- registrar, the API's follow and topic routes, the CLI): a row naming a user of an app erased at
-- or after the row's event time is not written (a trigger returning NULL: the statement goes on
-- and the writer counts that event stale). Each such write first takes a shared advisory lock on
-- its app (and schema), held to the end of its transaction; an erasure is recorded in a short
-- transaction of its own holding it exclusively (and no row lock), then erases. So the record waits
-- for writes of the app already under way, which the erasure then sees and erases, and writes that
-- come while it waits queue behind it and then see it: no register, subscribe or follow racing an
-- erasure brings the user back. One lock per app, however many rows a statement writes. The
-- erasure's own updates pass (herald.erasing, set for its transaction only), and so does an
-- unregister (it names no user as a new row, and invalidates a row there still is: an erasure whose
-- second transaction failed must not keep the user's logout out and the device live). A late
-- unsubscribe or unfollow of the user is kept out (as a new row it would store the user id again;
-- the upsert's proposed row is judged before its conflict), also while such an erasure is
-- unfinished: the erasure asked again deletes those rows. The triggers run with the schema
-- they were created in (the guard's SET search_path FROM CURRENT), whatever the writer's path; the
-- functions it calls run with it too, so the lock key names that schema.
CREATE OR REPLACE FUNCTION herald_user_key(p_app text, p_user text) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT sha256(convert_to(p_app, 'UTF8') || '\x00'::bytea || convert_to(p_user, 'UTF8')) $$;

CREATE OR REPLACE FUNCTION herald_erasure_lock(p_app text) RETURNS bigint LANGUAGE sql STABLE STRICT
  AS $$ SELECT hashtextextended('herald user erasure ' || current_schema() || ' ' || p_app, 0) $$;

CREATE OR REPLACE FUNCTION herald_erased_since(p_app text, p_user text, p_at timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('herald.erasing', true) = 'on' THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(herald_erasure_lock(p_app));
  RETURN EXISTS (SELECT 1 FROM user_erasures e WHERE e.app = p_app AND e.user_key = herald_user_key(p_app, p_user) AND e.erased_at >= p_at);
END $$;

-- The triggers' function. Arguments: the row's event-time column, then its user columns.
CREATE OR REPLACE FUNCTION erased_user_guard() RETURNS trigger LANGUAGE plpgsql
  SET search_path FROM CURRENT AS $$
DECLARE
  r jsonb := to_jsonb(NEW);
BEGIN
  FOR i IN 1 .. TG_NARGS - 1 LOOP
    IF herald_erased_since(r ->> 'app', r ->> TG_ARGV[i], (r ->> TG_ARGV[0])::timestamptz) THEN
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN NEW;
END $$;

-- A register (a user given, or changed, or a newer event, on a row left live); not an unregister,
-- an invalidation or the erasure's own tombstone (no user, or invalidated).
DROP TRIGGER IF EXISTS devices_erased_user_inserted ON devices;
CREATE TRIGGER devices_erased_user_inserted BEFORE INSERT ON devices
  FOR EACH ROW WHEN (NEW.user_id IS NOT NULL) EXECUTE FUNCTION erased_user_guard('last_event_at', 'user_id');
DROP TRIGGER IF EXISTS devices_erased_user_updated ON devices;
CREATE TRIGGER devices_erased_user_updated BEFORE UPDATE ON devices
  FOR EACH ROW WHEN (NEW.user_id IS NOT NULL AND NEW.invalidated_at IS NULL
    AND (NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.last_event_at IS DISTINCT FROM OLD.last_event_at))
  EXECUTE FUNCTION erased_user_guard('last_event_at', 'user_id');
-- A user member's join or leave (a device member names a token, kept as a tombstone by the erasure).
DROP TRIGGER IF EXISTS topic_members_erased_user ON topic_members;
CREATE TRIGGER topic_members_erased_user BEFORE INSERT OR UPDATE ON topic_members
  FOR EACH ROW WHEN (NEW.member_kind = 'user') EXECUTE FUNCTION erased_user_guard('event_at', 'member_id');
DROP TRIGGER IF EXISTS follows_erased_user ON follows;
CREATE TRIGGER follows_erased_user BEFORE INSERT OR UPDATE ON follows
  FOR EACH ROW EXECUTE FUNCTION erased_user_guard('event_at', 'follower', 'followee');
