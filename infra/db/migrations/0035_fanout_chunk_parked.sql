-- A fan-out chunk whose task was parked (the delivery limit, retries run out): its job shows
-- `parked: <code>` until that chunk is done (the task replayed), not merely until any later chunk
-- finishes; later chunks go on once a chunk has linked them, so one of those finishing says
-- nothing about the parked one. A constant default: no table rewrite.
ALTER TABLE fanout_chunks ADD COLUMN IF NOT EXISTS parked boolean NOT NULL DEFAULT false;
