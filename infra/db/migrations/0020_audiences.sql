-- Audiences (issue 20): device attributes for segments, topics, follow edges and the capped
-- recently-active follower index. See docs/adr/0012-audience-data.md.

-- Device attributes apps report at registration. app_version_parts is the numeric part of the
-- version ("5.2.0-beta1" -> {5,2}), trailing zeros trimmed so "5.2" = "5.2.0" and int[] order is
-- numeric order; the suffix takes no part in comparisons. Adding a stored generated column
-- rewrites the table: on a large devices table, run this migration in a maintenance window.
ALTER TABLE devices
  ADD COLUMN app_version text NULL CHECK (app_version IS NULL OR length(app_version) BETWEEN 1 AND 50),
  ADD COLUMN app_version_parts int[] GENERATED ALWAYS AS (
    string_to_array(regexp_replace(substring(app_version FROM '^[0-9]{1,9}(?:\.[0-9]{1,9})*'), '(\.0+)+$', ''), '.')::int[]
  ) STORED,
  ADD COLUMN last_seen_at timestamptz NULL;

-- Keyset streaming (broadcast, and segments that match most devices): active devices of an app by id.
CREATE INDEX devices_active_by_app_id ON devices (app, id) WHERE invalidated_at IS NULL;
-- Segment filters that select few devices: the planner picks these when they are selective.
CREATE INDEX devices_active_by_app_last_seen ON devices (app, last_seen_at) WHERE invalidated_at IS NULL;
CREATE INDEX devices_active_by_app_version ON devices (app, app_version_parts) WHERE invalidated_at IS NULL;
CREATE INDEX devices_active_by_app_locale ON devices (app, locale) WHERE invalidated_at IS NULL;
CREATE INDEX devices_active_by_app_timezone ON devices (app, timezone) WHERE invalidated_at IS NULL;

-- Topics per app. subscriber_count = members with subscribed = true, kept by the triggers below
-- in the same transaction as the membership change.
CREATE TABLE topics (
  app              text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  name             text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_.~-]{1,200}$'),
  created_at       timestamptz NOT NULL DEFAULT now(),
  subscriber_count bigint      NOT NULL DEFAULT 0,
  PRIMARY KEY (app, name)
);

-- One row per (topic, member); last event wins: event_at is the newest applied event's time, and
-- an older event changes nothing. Unsubscribed members stay as rows (subscribed = false) so a late
-- older "subscribe" cannot resurrect them. member_id: the user id, or '<platform>:<token>' for a
-- single device (resolved to the device row when the audience is read, so a device may subscribe
-- before its token is registered).
CREATE TABLE topic_members (
  app         text        NOT NULL,
  topic       text        NOT NULL,
  member_kind text        NOT NULL CHECK (member_kind IN ('user', 'device')),
  member_id   text        NOT NULL CHECK (length(member_id) BETWEEN 1 AND 4200),
  subscribed  boolean     NOT NULL,
  event_at    timestamptz NOT NULL,
  PRIMARY KEY (app, topic, member_kind, member_id),
  FOREIGN KEY (app, topic) REFERENCES topics (app, name) ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE FUNCTION topic_members_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE topics t SET subscriber_count = t.subscriber_count + n.added
  FROM (SELECT app, topic, count(*) FILTER (WHERE subscribed) AS added FROM inserted GROUP BY app, topic) n
  WHERE t.app = n.app AND t.name = n.topic AND n.added <> 0;
  RETURN NULL;
END $$;

CREATE FUNCTION topic_members_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE topics t SET subscriber_count = t.subscriber_count + d.delta
  FROM (
    SELECT app, topic, sum(v) AS delta FROM (
      SELECT app, topic, subscribed::int AS v FROM new_rows
      UNION ALL
      SELECT app, topic, -(subscribed::int) FROM old_rows
    ) s GROUP BY app, topic
  ) d
  WHERE t.app = d.app AND t.name = d.topic AND d.delta <> 0;
  RETURN NULL;
END $$;

CREATE TRIGGER topic_members_inserted AFTER INSERT ON topic_members
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION topic_members_count_inserted();
CREATE TRIGGER topic_members_updated AFTER UPDATE ON topic_members
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION topic_members_count_updated();

-- "follower follows followee" edges; last event wins like topic_members.
CREATE TABLE follows (
  app       text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  followee  text        NOT NULL CHECK (length(followee) BETWEEN 1 AND 200),
  follower  text        NOT NULL CHECK (length(follower) BETWEEN 1 AND 200),
  following boolean     NOT NULL,
  event_at  timestamptz NOT NULL,
  PRIMARY KEY (app, followee, follower)
);
-- A user's own edges (refreshing the recently-active index when they become active).
CREATE INDEX follows_by_follower ON follows (app, follower) WHERE following;

-- Per followee: how many follow them (exact, kept by triggers), and the state of their capped index.
CREATE TABLE followees (
  app               text        NOT NULL,
  followee          text        NOT NULL,
  follower_count    bigint      NOT NULL DEFAULT 0,
  recent_refilled_at timestamptz NULL,
  PRIMARY KEY (app, followee)
);

CREATE FUNCTION follows_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO followees AS f (app, followee, follower_count)
  SELECT app, followee, count(*) FILTER (WHERE following) FROM inserted GROUP BY app, followee
  ON CONFLICT (app, followee) DO UPDATE SET follower_count = f.follower_count + excluded.follower_count;
  RETURN NULL;
END $$;

CREATE FUNCTION follows_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE followees f SET follower_count = f.follower_count + d.delta
  FROM (
    SELECT app, followee, sum(v) AS delta FROM (
      SELECT app, followee, following::int AS v FROM new_rows
      UNION ALL
      SELECT app, followee, -(following::int) FROM old_rows
    ) s GROUP BY app, followee
  ) d
  WHERE f.app = d.app AND f.followee = d.followee AND d.delta <> 0;
  RETURN NULL;
END $$;

CREATE TRIGGER follows_inserted AFTER INSERT ON follows
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION follows_count_inserted();
CREATE TRIGGER follows_updated AFTER UPDATE ON follows
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION follows_count_updated();

-- Flickr's capped recently-active follower index: per followee at most N (default 10,000) of its
-- followers, the most recently active first. active_at = the newest last_seen_at of the follower's
-- active devices (NULL: none). Kept by libs/db/src/follow-index.ts: follow/unfollow events, device
-- activity at registration, and a refill from follows + devices when it shrinks below its minimum.
CREATE TABLE follower_recent (
  app       text        NOT NULL,
  followee  text        NOT NULL,
  follower  text        NOT NULL,
  active_at timestamptz NULL,
  PRIMARY KEY (app, followee, follower)
);
-- Read order: most recently active first (keyset on (active_at, follower)).
CREATE INDEX follower_recent_by_activity ON follower_recent (app, followee, active_at DESC NULLS LAST, follower);
-- Device activity updates a user's rows in every index they are in.
CREATE INDEX follower_recent_by_follower ON follower_recent (app, follower);
