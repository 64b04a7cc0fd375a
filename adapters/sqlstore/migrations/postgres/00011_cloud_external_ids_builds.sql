-- cloud_external_ids holds the external id devpilot generates for each org:
-- the one its assumed roles are given (AWS's guard against the confused
-- deputy), random, stable, and never another org's. cloud_builds remembers
-- the builds devpilot started, so that devpilot's build id alone finds the
-- account, app, branch and provider job again.

-- +goose Up
CREATE TABLE cloud_external_ids (
    org_id      TEXT NOT NULL PRIMARY KEY REFERENCES orgs (id),
    external_id TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE cloud_builds (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    account_id TEXT NOT NULL REFERENCES cloud_accounts (id) ON DELETE CASCADE,
    app_id     TEXT NOT NULL,
    branch     TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX cloud_builds_account_id_idx ON cloud_builds (account_id);

-- +goose Down
DROP TABLE cloud_builds;
DROP TABLE cloud_external_ids;
