-- Erasing a user of an app (POST /v1/users:erase, herald erase-user; libs/db/src/user-erasure.ts).
--
-- One row per erased user of an app: the user id is not kept, only user_key = SHA-256 of the app
-- id, a NUL and the user id (erasureKey), and when the erasure was made (PostgreSQL's clock). The
-- registrar reads it to treat an event of that user older than the erasure (a register, topic
-- subscribe or follow delivered late, or replayed from a parked queue) as stale, so an erasure is
-- not undone by a message that was already on its way. An erasure made again moves erased_at on.
CREATE TABLE IF NOT EXISTS user_erasures (
  app       text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  user_key  bytea       NOT NULL CHECK (length(user_key) = 32),
  erased_at timestamptz NOT NULL,
  PRIMARY KEY (app, user_key)
);

-- What an erasure looks up that no index served: a user's topic memberships (the primary key
-- leads with the topic), a user's follow edges whichever their state (follows_by_follower holds
-- only edges being followed, and is replaced by this wider one). Building them blocks writes to
-- topic_members and follows (subscribing and following wait) but not reads (fan-outs go on). On
-- large tables, build them beforehand without blocking:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS topic_members_by_member ON topic_members (app, member_kind, member_id);
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS follows_by_follower_any ON follows (app, follower);
-- and this migration then finds them and only drops follows_by_follower.
CREATE INDEX IF NOT EXISTS topic_members_by_member ON topic_members (app, member_kind, member_id);
CREATE INDEX IF NOT EXISTS follows_by_follower_any ON follows (app, follower);
DROP INDEX IF EXISTS follows_by_follower;
