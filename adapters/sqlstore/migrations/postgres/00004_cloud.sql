-- JSON columns are TEXT, so the bytes a store is given are the bytes it
-- returns; NULL stands for an empty json.RawMessage. Account names collate
-- as "C" (bytewise), so they sort as on SQLite whatever the database's locale.

-- +goose Up
CREATE TABLE cloud_accounts (
    id             TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    provider       TEXT NOT NULL,
    name           TEXT COLLATE "C" NOT NULL,
    region         TEXT NOT NULL,
    auth_mode      TEXT NOT NULL CHECK (auth_mode IN ('assume_role', 'access_key')),
    role_arn       TEXT NOT NULL DEFAULT '',
    external_id    TEXT NOT NULL DEFAULT '',
    access_key_id  TEXT NOT NULL DEFAULT '',
    sealed_secret  TEXT NOT NULL DEFAULT '', -- sealed with the Cipher, never in the clear
    read_only      BOOLEAN NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('untested', 'ok', 'failed')),
    last_tested_at TIMESTAMPTZ,
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (org_id, name) -- also orders an org's accounts by name
);

CREATE TABLE cost_cache (
    account_id TEXT NOT NULL REFERENCES cloud_accounts (id) ON DELETE CASCADE,
    cache_key  TEXT NOT NULL,
    report     TEXT NOT NULL, -- ports.CostReport as JSON
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, cache_key)
);

-- No foreign key to the account or the user: entries outlive both.
CREATE TABLE audit_log (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL,
    account_id TEXT NOT NULL,
    action     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    arguments  TEXT,
    outcome    TEXT NOT NULL CHECK (outcome IN ('ok', 'failed', 'refused')),
    error      TEXT NOT NULL DEFAULT '',
    at         TIMESTAMPTZ NOT NULL
);

CREATE INDEX audit_log_org_id_at_idx ON audit_log (org_id, at DESC, id DESC);
CREATE INDEX audit_log_org_id_account_id_at_idx ON audit_log (org_id, account_id, at DESC, id DESC);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE cost_cache;
DROP TABLE cloud_accounts;
