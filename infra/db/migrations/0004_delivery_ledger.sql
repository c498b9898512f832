-- One row per pushId: 'sending' while a pusher holds the claim (a lease from claimed_at),
-- 'done' once the provider answered. A redelivered push that is done is acked without sending.
CREATE TABLE delivery_ledger (
  push_id      uuid        PRIMARY KEY,
  state        text        NOT NULL CHECK (state IN ('sending', 'done')),
  outcome      text        NULL,
  owner        text        NOT NULL,
  claimed_at   timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz NULL,
  CONSTRAINT delivery_ledger_done_complete CHECK ((state = 'done') = (completed_at IS NOT NULL))
);

-- Pruning old entries (and, later, partitioning) goes by completion time.
CREATE INDEX delivery_ledger_completed_at ON delivery_ledger (completed_at);
