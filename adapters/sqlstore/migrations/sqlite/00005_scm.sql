-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order. Text compares bytewise (BINARY), as in the
-- PostgreSQL tree (COLLATE "C"). An absent text is ''.

-- +goose Up
-- A pending OAuth authorisation: single use (consumed by DELETE … RETURNING)
-- and bound to the user who started it.
CREATE TABLE oauth_states (
    state          TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    user_id        TEXT NOT NULL,
    code_verifier  TEXT NOT NULL,
    redirect_after TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE TABLE scm_connections (
    id           TEXT NOT NULL PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    user_id      TEXT NOT NULL,
    provider     TEXT NOT NULL,
    login        TEXT NOT NULL,
    sealed_token TEXT NOT NULL, -- sealed with the Cipher, never in the clear
    status       TEXT NOT NULL CHECK (status IN ('active', 'broken')),
    error        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (org_id, user_id, provider), -- one connection per owner and provider: the upsert's key
    UNIQUE (id, org_id, user_id),       -- what repositories refer to, so a repository is its connection's owner's
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

-- A repository as one connection sees it: the same provider repository seen
-- by two owners is two rows with two ids.
CREATE TABLE repositories (
    id             TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    connection_id  TEXT NOT NULL,
    provider_id    INTEGER NOT NULL,
    full_name      TEXT NOT NULL,
    owner          TEXT NOT NULL,
    name           TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    default_branch TEXT NOT NULL DEFAULT '',
    html_url       TEXT NOT NULL DEFAULT '',
    private        INTEGER NOT NULL CHECK (private IN (0, 1)),
    pushed_at      TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    UNIQUE (connection_id, provider_id), -- the upsert's key
    FOREIGN KEY (connection_id, org_id, user_id) REFERENCES scm_connections (id, org_id, user_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX repositories_owner_full_name_idx ON repositories (org_id, user_id, full_name, id);
CREATE INDEX repositories_provider_id_idx ON repositories (provider_id);

-- Stored before processing, de-duplicated by the provider's delivery id. No
-- secondary index: inserting is on the webhook's hot path.
CREATE TABLE webhook_deliveries (
    id           TEXT NOT NULL PRIMARY KEY, -- the provider's delivery id (X-GitHub-Delivery)
    event        TEXT NOT NULL,
    payload      BLOB NOT NULL,             -- the raw body, byte for byte
    status       TEXT NOT NULL CHECK (status IN ('pending', 'processed', 'ignored', 'failed')),
    error        TEXT NOT NULL DEFAULT '',
    received_at  TEXT NOT NULL,
    processed_at TEXT
) STRICT;

-- Keyed by the provider's repository id, not by a repositories row: activity
-- is the repository's, whoever connected it. No foreign key to the delivery:
-- activity read from the API has none.
CREATE TABLE scm_activity (
    id          TEXT NOT NULL PRIMARY KEY,
    repo_id     INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    action      TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL DEFAULT '',
    ref         TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL DEFAULT '',
    url         TEXT NOT NULL DEFAULT '',
    at          TEXT NOT NULL,
    source      TEXT NOT NULL,
    delivery_id TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX scm_activity_repo_id_at_idx ON scm_activity (repo_id, at DESC, id DESC);

-- +goose Down
DROP TABLE scm_activity;
DROP TABLE webhook_deliveries;
DROP TABLE repositories;
DROP TABLE scm_connections;
DROP TABLE oauth_states;
