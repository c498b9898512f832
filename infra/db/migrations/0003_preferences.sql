-- A user who opted out of a category gets no push of that category.
CREATE TABLE opt_outs (
  user_id    text        NOT NULL CHECK (length(user_id) BETWEEN 1 AND 200),
  category   text        NOT NULL CHECK (length(category) BETWEEN 1 AND 100),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, category)
);

-- A user who muted an object ("thread:42") gets no push about it until `until` (NULL = forever).
CREATE TABLE mutes (
  user_id    text        NOT NULL CHECK (length(user_id) BETWEEN 1 AND 200),
  object_id  text        NOT NULL CHECK (length(object_id) BETWEEN 1 AND 200),
  until      timestamptz NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, object_id)
);
