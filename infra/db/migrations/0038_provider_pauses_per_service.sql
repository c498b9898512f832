-- Web Push pauses are kept per push service (docs/adr/0006-provider-back-off.md): the row's app is
-- "<app>@<push service host>". An app id (at most 64 characters) at a host of an app's own
-- allow-list (a DNS name: at most 253) can exceed the 200 characters 0013 allowed, and that
-- pause was then only logged, never shared with the other pushers.
ALTER TABLE provider_pauses DROP CONSTRAINT IF EXISTS provider_pauses_app_check;
ALTER TABLE provider_pauses ADD CONSTRAINT provider_pauses_app_check CHECK (length(app) BETWEEN 1 AND 400);
-- With a row per app and push service (the regional hosts of WNS are many), rows whose pause
-- ended a day ago are deleted when a new pause is written (rate-limit-repository.ts).
