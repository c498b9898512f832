-- Token rotation (migration 0045): the transaction that made the link, beside replaced_by and
-- replaced_at. A topic fan-out reads its members as of its start snapshot (migration 0026); a device
-- member whose link is not in that snapshot was replaced while the fan-out ran, and is read as the
-- device its chain of replacements ends at (libs/db/src/audience-stream.ts), since the membership
-- its rotation copied to the new token is left out, as every change since the start is. Set and
-- cleared with replaced_by; null for a link made before this migration (read as one from before any
-- fan-out running now).
ALTER TABLE devices ADD COLUMN IF NOT EXISTS replaced_xid xid8 NULL;
