-- The release path publishes each stored push as the text it was stored as, without parsing
-- and re-encoding it (issue 3; a large share of a descheduler's CPU went to that):
--   * payload becomes json, which PostgreSQL keeps verbatim (jsonb is rebuilt on the way in
--     and re-serialised, with different spacing, on the way out);
--   * the two facts a descheduler needs without parsing it get their own columns: when the
--     push expires (expired pushes are dropped at release) and whether it is traced;
--   * the bigserial id is dropped: nothing reads it (claims delete by ctid; push_id is the key),
--     and it cost an index entry per stored push.
ALTER TABLE scheduled_pushes
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN trace boolean NOT NULL DEFAULT false;
UPDATE scheduled_pushes
  SET expires_at = (payload->>'expiresAt')::timestamptz, trace = coalesce((payload->>'trace')::boolean, false)
  WHERE payload ? 'expiresAt' OR payload ? 'trace';
ALTER TABLE scheduled_pushes
  ALTER COLUMN payload TYPE json USING payload::json,
  DROP COLUMN id;
