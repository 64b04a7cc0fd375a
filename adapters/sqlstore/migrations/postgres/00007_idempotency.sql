-- +goose Up
-- A user's Idempotency-Key: claimed while the first request that sent it runs
-- (completed FALSE), then holding that request's response (completed TRUE).
-- Either way the row lapses at expires_at: a claim is abandoned, a response
-- forgotten, and the key may be claimed afresh.
CREATE TABLE idempotency_keys (
    org_id          TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    method          TEXT NOT NULL,
    route           TEXT NOT NULL,                   -- the route pattern
    request_hash    BYTEA NOT NULL,                  -- SHA-256 of method, path and body
    completed       BOOLEAN NOT NULL DEFAULT FALSE,
    status          INTEGER NOT NULL DEFAULT 0,      -- 0 until completed
    header          TEXT NOT NULL DEFAULT '{}',      -- a JSON object: header name → value
    body            BYTEA,                           -- NULL until completed, or when omitted
    body_omitted    BOOLEAN NOT NULL DEFAULT FALSE,  -- the body was too large to keep
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, user_id, idempotency_key),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
);

CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);
-- Serves the foreign key's cascade from users.
CREATE INDEX idempotency_keys_user_id_idx ON idempotency_keys (user_id);

-- +goose Down
DROP TABLE idempotency_keys;
