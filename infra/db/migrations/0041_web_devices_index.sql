-- An app's valid Web Push subscriptions, by the VAPID public key they were made with: whether an
-- app has browsers (the HTTP API's Web Push rules for an app without keys of its own) and whether
-- any still use the previous pair (a VAPID rotation). Read through devices_active_by_app_id, a
-- mobile-only app's answer walked every valid device of the app looking for a browser, and the
-- planner, taking app and platform for independent, chose to scan every app's devices instead.
-- Building it blocks writes to devices (registrations and invalidations wait in their queues) but
-- not reads (targeting goes on). On a large table, build it beforehand without blocking writes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_active_web_by_app ON devices (app, web_vapid_key) WHERE platform = 'web' AND invalidated_at IS NULL;
-- and this migration then finds it and does nothing.
CREATE INDEX IF NOT EXISTS devices_active_web_by_app ON devices (app, web_vapid_key) WHERE platform = 'web' AND invalidated_at IS NULL;
