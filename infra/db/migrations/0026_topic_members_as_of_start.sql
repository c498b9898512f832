-- An audience fan-out reads a topic as its members were when the fan-out started. It walks the
-- user members first and the device members after, leaving out a device member whose user is a
-- subscribed user member (its device came in with the user). Read against the members of the
-- moment, a user who unsubscribed between the two phases had their device member read twice
-- (the job's targeted count then never adds up) and one who subscribed between them had it read
-- in neither. So each membership row keeps the transaction that last flipped it (inserted, or
-- subscribed changed), and each fan-out the snapshot it started with: a member whose flip that
-- snapshot does not see changed during the fan-out, and is left out of both phases the same way.
-- Rows from before this migration have no flip recorded and count as unchanged. Nullable, no
-- default: no table rewrite.
ALTER TABLE topic_members ADD COLUMN IF NOT EXISTS changed_xid xid8 NULL;
ALTER TABLE fanouts ADD COLUMN IF NOT EXISTS start_snapshot pg_snapshot NULL;
