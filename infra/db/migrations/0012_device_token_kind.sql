-- APNs hands an app different tokens for different push types: the device token (alert and
-- background pushes), a PushKit VoIP token, and a push token per Live Activity. A push of one
-- type sent to a token of another is refused by Apple (DeviceTokenNotForTopic), which Herald would
-- read as a dead token. So each device row says which kind of token it holds, and a job's push
-- type selects the rows it reaches (issue 16). Existing rows are device tokens.
ALTER TABLE devices
  ADD COLUMN token_kind text NOT NULL DEFAULT 'device'
  CONSTRAINT devices_token_kind_check CHECK (token_kind IN ('device', 'voip', 'liveactivity'));
