-- When a webhook subscription's endpoint last failed. A failure long after the previous one (a
-- quiet spell with no attempt at all) starts a new failing spell instead of continuing the old:
-- two failures a day apart, nothing sent between them, are not "failing for a day". A spell under
-- way counts from its start, as before.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS last_failed_at timestamptz;
UPDATE webhook_subscriptions SET last_failed_at = failing_since WHERE failing_since IS NOT NULL AND last_failed_at IS NULL;
