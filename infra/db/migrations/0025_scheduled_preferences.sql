-- A stored push remembers its job's opt-out category and muted object, so the descheduler can ask
-- again when the push falls due: a user who opts out of "marketing" at 21:00 gets none of the
-- marketing pushes stored at 18:00 for 09:00 tomorrow, and one who mutes "thread:42" meanwhile
-- gets none about it (each recorded as opted-out / muted in the job's status). Rows stored before
-- this migration have neither and are released as before. Nullable, no default: no table rewrite.
ALTER TABLE scheduled_pushes ADD COLUMN IF NOT EXISTS category text NULL, ADD COLUMN IF NOT EXISTS object_id text NULL;
