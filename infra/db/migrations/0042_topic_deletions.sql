-- Deleting a topic (DELETE /v1/topics/:name, herald topics delete; libs/db/src/topic-deletion.ts).
--
-- One row per deleted topic of an app: when it was deleted, by PostgreSQL's clock once the topic's
-- row was had (a delete carries no event time of its own, as an erasure carries none: 0040); not
-- moved on to its members' times, which held the topic created again closed to every subscribe for
-- as long as one member's clock ran ahead. A membership event stamped at or before it is stale, in the
-- topic created again under the same name too: a subscribe from before the deletion delivered late
-- (a registrar backlog, a parked message replayed, an import with original times) no longer brings
-- its member back into the new topic. Refusing events older than the topic's creation instead
-- would refuse an import into a topic created today of members who joined another system years ago.
-- A topic deleted again moves deleted_at on. Each delete prunes deletions older than 90 days (the
-- time a dead device's row is kept, DEVICE_RETENTION_DAYS' default), so the table holds about the
-- last 90 days' deletions; a message delivered later than that is taken as for a pruned device.
CREATE TABLE IF NOT EXISTS topic_deletions (
  app        text        NOT NULL REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE,
  topic      text        NOT NULL,
  deleted_at timestamptz NOT NULL,
  PRIMARY KEY (app, topic)
);
-- The prune's order.
CREATE INDEX IF NOT EXISTS topic_deletions_by_deleted_at ON topic_deletions (deleted_at);

-- A topic's row is deleted first (fan-outs, jobs and subscribes find it gone at once) and its
-- members after it, in batches of their own transactions: through the foreign key to topics they
-- were deleted by its cascade in the same statement, millions of rows in one transaction (its
-- locks held throughout, a burst of WAL, the statement timeout). Member rows of a deleted topic
-- stay until those batches are done, no membership to a reader deciding who gets a push (a
-- fan-out's chunks, a stored push's release ask whether the topic exists); creating the topic
-- again finishes them first. They keep the foreign key to their app instead (an app deleted or
-- renamed by hand takes them with it), not validated: every row there is names a topic of an app.
-- No statement here reads the table: dropping the key locks topic_members and topics exclusively,
-- adding one NOT VALID locks topic_members and apps against writes (SHARE ROW EXCLUSIVE), held
-- until the migration commits a moment later, not through a scan of millions of rows; each is
-- waited for within the migrator's lock_timeout and tried again after it (migrations.ts).
ALTER TABLE topic_members DROP CONSTRAINT IF EXISTS topic_members_app_topic_fkey;
ALTER TABLE topic_members DROP CONSTRAINT IF EXISTS topic_members_app_fkey;
ALTER TABLE topic_members ADD CONSTRAINT topic_members_app_fkey
  FOREIGN KEY (app) REFERENCES apps (id) ON UPDATE CASCADE ON DELETE CASCADE NOT VALID;
