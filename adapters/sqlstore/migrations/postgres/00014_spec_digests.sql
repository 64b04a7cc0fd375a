-- +goose Up
-- The digest of a specification session's raw inputs, made when they are
-- too long for the model: the stages after it are given the digest instead.
-- One per session; input_ids (a JSON array) are the inputs it digests, so
-- the core can tell when an input added later makes it out of date.
CREATE TABLE spec_digests (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES spec_sessions (id) ON DELETE CASCADE,
    input_ids  TEXT NOT NULL,
    data       TEXT NOT NULL,
    content    TEXT NOT NULL,
    model      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE spec_digests;
