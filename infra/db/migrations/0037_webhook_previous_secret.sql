-- A webhook subscription's secret can be rotated: the previous one is kept until
-- previous_secret_until, and every delivery meanwhile carries a signature (v1=) for each, so a
-- receiver may switch to the new secret whenever it likes within that window.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS previous_secret text;
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS previous_secret_until timestamptz;
