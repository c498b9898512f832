-- Webhook subscriptions (issue 9): a team's callback URL watching one resource (type + id) or
-- every resource of a type (resource_id = '*'). The secret is the HMAC-SHA256 key the
-- webhook-pusher signs each notification with, so it is kept readable (like the API-key hash,
-- the table must be protected as a credential store).
-- failing_since: set at the first failed delivery after a success, cleared by the next success;
-- once it is older than WEBHOOK_DISABLE_AFTER_MS the pusher disables the subscription.
CREATE TABLE webhook_subscriptions (
  id              uuid        PRIMARY KEY,
  team            text        NOT NULL CHECK (length(team) BETWEEN 1 AND 100),
  callback_url    text        NOT NULL CHECK (length(callback_url) BETWEEN 1 AND 2048),
  resource_type   text        NOT NULL CHECK (length(resource_type) BETWEEN 1 AND 64),
  resource_id     text        NOT NULL CHECK (length(resource_id) BETWEEN 1 AND 200),
  secret          text        NOT NULL CHECK (length(secret) BETWEEN 16 AND 256),
  enabled         boolean     NOT NULL DEFAULT true,
  failing_since   timestamptz NULL,
  disabled_at     timestamptz NULL,
  disabled_reason text        NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- The fan-out's lookup: enabled subscriptions of (type, id) plus those of (type, '*').
CREATE INDEX webhook_subscriptions_match ON webhook_subscriptions (resource_type, resource_id) WHERE enabled;
CREATE INDEX webhook_subscriptions_team ON webhook_subscriptions (team, created_at);

-- Webhooks share the fleet-wide outbound budgets: platform 'webhook', app = destination host:port.
ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_platform_check;
ALTER TABLE rate_limits ADD CONSTRAINT rate_limits_platform_check CHECK (platform IN ('apns', 'fcm', 'webhook'));
