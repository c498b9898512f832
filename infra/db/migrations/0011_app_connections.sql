-- Per-app provider connection settings, next to the app's own credentials (0008): the endpoint
-- (host, port), the CA bundle trusted there (PEM, not secret) and an HTTP CONNECT egress proxy.
-- The proxy URL may carry a user and password, so it is sealed like the credentials: a SecretBox
-- envelope with "<platform>-proxy:<app id>" as associated data (libs/db/src/app-credentials.ts).
-- NULL means "the pusher's default" (APNS_ADDRESS, APNS_CA_FILE, APNS_PROXY_URL, FCM_HOST, ...).
-- They only apply to an app's own credentials, so they need them; changing them bumps
-- credentials_version so pushers rebuild the app's provider.
ALTER TABLE apps
  ADD COLUMN apns_address      text    NULL CHECK (apns_address IS NULL OR length(apns_address) BETWEEN 1 AND 253),
  ADD COLUMN apns_port         integer NULL CHECK (apns_port IS NULL OR apns_port BETWEEN 1 AND 65535),
  ADD COLUMN apns_ca_pem       text    NULL,
  ADD COLUMN apns_proxy_secret text    NULL,
  ADD COLUMN fcm_host          text    NULL CHECK (fcm_host IS NULL OR length(fcm_host) BETWEEN 1 AND 253),
  ADD COLUMN fcm_port          integer NULL CHECK (fcm_port IS NULL OR fcm_port BETWEEN 1 AND 65535),
  ADD COLUMN fcm_ca_pem        text    NULL,
  ADD COLUMN fcm_proxy_secret  text    NULL,
  ADD CONSTRAINT apps_apns_connection_needs_credentials
    CHECK (apns_auth IS NOT NULL OR num_nonnulls(apns_address, apns_port, apns_ca_pem, apns_proxy_secret) = 0),
  ADD CONSTRAINT apps_fcm_connection_needs_credentials
    CHECK (fcm_auth IS NOT NULL OR num_nonnulls(fcm_host, fcm_port, fcm_ca_pem, fcm_proxy_secret) = 0);
