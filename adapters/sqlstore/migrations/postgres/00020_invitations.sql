-- +goose Up
-- An admin's invitation to join the organisation with a role, accepted at
-- most once. The secret is kept only as its SHA-256 (hash). email is
-- lower-cased by the store; '' lets anyone with the secret accept it.
CREATE TABLE invitations (
    id          TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    hash        BYTEA NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    accepted_at TIMESTAMPTZ,
    accepted_by TEXT NOT NULL DEFAULT '',
    revoked_at  TIMESTAMPTZ
);

CREATE INDEX invitations_org_id_created_at_idx ON invitations (org_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE invitations;
