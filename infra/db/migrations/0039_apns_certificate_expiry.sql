-- When an app's APNs client certificate (auth "certificate") stops being valid, in the clear (a
-- certificate's dates are not secret): shown with the app (GET /admin/apps, herald apps list) and
-- read by the monitor's apns-certificate-expiring alarm. Null for token auth and for no
-- credentials. A certificate sealed before this migration gets it the first time a pusher reads
-- the app's credentials (the migration cannot open the sealed secret).
alter table apps add column apns_certificate_expires_at timestamptz;
