-- Apps that may send pushes. Credentials arrive in a later migration.
CREATE TABLE apps (
  id             text        PRIMARY KEY
                             CHECK (id ~ '^[a-z0-9][a-z0-9._-]*$' AND length(id) <= 64),
  apns_topic     text        NULL CHECK (apns_topic IS NULL OR length(apns_topic) BETWEEN 1 AND 255),
  fcm_project_id text        NULL CHECK (fcm_project_id IS NULL OR length(fcm_project_id) BETWEEN 1 AND 255),
  enabled        boolean     NOT NULL DEFAULT true,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
