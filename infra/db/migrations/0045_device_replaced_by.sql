-- Token rotation (libs/db/src/device-registration.ts, delivery-ledger.ts). A register may name the
-- token it replaces (`previousToken`: APNs and FCM hand an app a new token after a restore or a
-- refresh, a browser a new subscription in `pushsubscriptionchange`). The old token's row, while
-- still the same user's, is then invalidated ('replaced') in the same statement that makes the new
-- token the user's live device, and, when it did (the new token was not her live device before),
-- keeps the new row's id here. A push made for the old token while it was live (stored for a
-- later time, queued, waiting for a retry) is then sent to the token the chain of replacements
-- ends at, if that is still live and the push's user's (the pusher's claim), not dropped as dead:
-- no snapshot saw both tokens live and hers, so no job made a push for each. A register that
-- revives a row clears it. No foreign key: ids are never reused, and a replacement pruned or
-- deleted since ends the chain (the push is then dropped as dead, as before).
ALTER TABLE devices ADD COLUMN IF NOT EXISTS replaced_by bigint NULL;
-- When the link was made (this database's clock): a user job's fan-out handled again (its message
-- redelivered) addresses the old device, not its replacement, if the link came after the job's
-- first fan-out recorded it (device-targets.ts, queryGone): that fan-out's push for the old token
-- is then the same push, one send. (When the link was written, not committed: a first pass that read
-- between the two is taken for one after it.)
ALTER TABLE devices ADD COLUMN IF NOT EXISTS replaced_at timestamptz NULL;
-- A fan-out chunk asks which of its devices replaced a device another chunk of the job planned
-- (fanout-repository.ts, plannedElsewhere): only replaced rows are indexed.
CREATE INDEX IF NOT EXISTS devices_replaced_by ON devices (replaced_by) WHERE replaced_by IS NOT NULL;
