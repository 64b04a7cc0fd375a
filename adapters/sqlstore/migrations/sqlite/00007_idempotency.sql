-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order. Maps are TEXT holding a JSON object ('{}' when
-- empty). Text compares bytewise (BINARY), as in the PostgreSQL tree
-- (COLLATE "C").

-- +goose Up
-- A user's Idempotency-Key: claimed while the first request that sent it runs
-- (completed 0), then holding that request's response (completed 1). Either
-- way the row lapses at expires_at: a claim is abandoned, a response
-- forgotten, and the key may be claimed afresh.
CREATE TABLE idempotency_keys (
    org_id          TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    method          TEXT NOT NULL,
    route           TEXT NOT NULL,                                           -- the route pattern
    request_hash    BLOB NOT NULL,                                           -- SHA-256 of method, path and body
    completed       INTEGER NOT NULL DEFAULT 0 CHECK (completed IN (0, 1)),
    status          INTEGER NOT NULL DEFAULT 0,                              -- 0 until completed
    header          TEXT NOT NULL DEFAULT '{}',                              -- a JSON object: header name → value
    body            BLOB,                                                    -- NULL until completed, or when omitted
    body_omitted    INTEGER NOT NULL DEFAULT 0 CHECK (body_omitted IN (0, 1)), -- the body was too large to keep
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    PRIMARY KEY (org_id, user_id, idempotency_key),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);
-- Serves the foreign key's cascade from users.
CREATE INDEX idempotency_keys_user_id_idx ON idempotency_keys (user_id);

-- +goose Down
DROP TABLE idempotency_keys;
