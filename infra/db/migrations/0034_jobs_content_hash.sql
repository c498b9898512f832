-- A digest of the job as the HTTP API accepted it (contracts jobContentHash: every field but
-- acceptedAt and trace, keys sorted), so a post of the same id with other content is refused (409
-- job-id-reused) instead of being published beside the first, each device getting whichever copy a
-- pusher claimed first. NULL for jobs recorded before, and for those the demuxer records (client
-- library over AMQP): nothing to compare, as before.
-- Nullable, no default: no table rewrite.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS content_hash bytea NULL;
