-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order.

-- +goose Up
CREATE TABLE orgs (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE users (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    email      TEXT NOT NULL UNIQUE, -- lower-cased by the store
    role       TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at TEXT NOT NULL,
    UNIQUE (id, org_id)
) STRICT;

CREATE INDEX users_org_id_idx ON users (org_id);

CREATE TABLE api_tokens (
    id           TEXT NOT NULL PRIMARY KEY,
    user_id      TEXT NOT NULL,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    last_used_at TEXT,
    revoked_at   TEXT,
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX api_tokens_org_id_created_at_idx ON api_tokens (org_id, created_at DESC);
CREATE INDEX api_tokens_user_id_created_at_idx ON api_tokens (user_id, created_at DESC);
CREATE INDEX api_tokens_created_at_idx ON api_tokens (created_at DESC);
CREATE INDEX api_tokens_expires_at_idx ON api_tokens (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX api_tokens_revoked_at_idx ON api_tokens (revoked_at) WHERE revoked_at IS NOT NULL;

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE users;
DROP TABLE orgs;
