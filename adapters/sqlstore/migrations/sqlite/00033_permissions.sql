-- +goose NO TRANSACTION
-- The operator role: runs the writes the permission policy gives it (by
-- default cloud writes and publishing) without administering the org.
-- SQLite cannot change a CHECK constraint, so users and invitations are
-- rebuilt the way SQLite documents (foreign keys off, one transaction,
-- rename), as 00024 rebuilt users.
--
-- permission_grants is an organisation's choice of the roles allowed one
-- permission (such as cloud.scale), replacing the permission's defaults;
-- roles is the allowed roles, comma-separated ('' for none).

-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE users_new (
    id             TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    email          TEXT NOT NULL, -- lower-cased by the store
    email_verified INTEGER NOT NULL CHECK (email_verified IN (0, 1)),
    role           TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'member')),
    created_at     TEXT NOT NULL,
    removed_at     TEXT,
    UNIQUE (id, org_id)
) STRICT;
INSERT INTO users_new (id, org_id, email, email_verified, role, created_at, removed_at)
SELECT id, org_id, email, email_verified, role, created_at, removed_at FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
CREATE INDEX users_org_id_idx ON users (org_id);
CREATE INDEX users_email_idx ON users (email);
CREATE UNIQUE INDEX users_verified_email_key ON users (email) WHERE email_verified = 1;

CREATE TABLE invitations_new (
    id          TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'member')),
    hash        BLOB NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT,
    accepted_by TEXT NOT NULL DEFAULT '',
    revoked_at  TEXT
) STRICT;
INSERT INTO invitations_new SELECT id, org_id, email, role, hash, prefix, created_by, created_at, expires_at,
    accepted_at, accepted_by, revoked_at FROM invitations;
DROP TABLE invitations;
ALTER TABLE invitations_new RENAME TO invitations;
CREATE INDEX invitations_org_id_created_at_idx ON invitations (org_id, created_at DESC, id DESC);

CREATE TABLE permission_grants (
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    permission TEXT NOT NULL,
    roles      TEXT NOT NULL,
    updated_by TEXT NOT NULL, -- a user id, kept after the user is gone
    updated_at TEXT NOT NULL,
    PRIMARY KEY (org_id, permission)
) STRICT;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

DROP TABLE permission_grants;

-- Fails while an operator or an invitation to be one exists.
CREATE TABLE users_old (
    id             TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    email          TEXT NOT NULL,
    email_verified INTEGER NOT NULL CHECK (email_verified IN (0, 1)),
    role           TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at     TEXT NOT NULL,
    removed_at     TEXT,
    UNIQUE (id, org_id)
) STRICT;
INSERT INTO users_old (id, org_id, email, email_verified, role, created_at, removed_at)
SELECT id, org_id, email, email_verified, role, created_at, removed_at FROM users;
DROP TABLE users;
ALTER TABLE users_old RENAME TO users;
CREATE INDEX users_org_id_idx ON users (org_id);
CREATE INDEX users_email_idx ON users (email);
CREATE UNIQUE INDEX users_verified_email_key ON users (email) WHERE email_verified = 1;

CREATE TABLE invitations_old (
    id          TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    hash        BLOB NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT,
    accepted_by TEXT NOT NULL DEFAULT '',
    revoked_at  TEXT
) STRICT;
INSERT INTO invitations_old SELECT id, org_id, email, role, hash, prefix, created_by, created_at, expires_at,
    accepted_at, accepted_by, revoked_at FROM invitations;
DROP TABLE invitations;
ALTER TABLE invitations_old RENAME TO invitations;
CREATE INDEX invitations_org_id_created_at_idx ON invitations (org_id, created_at DESC, id DESC);

COMMIT;
PRAGMA foreign_keys = ON;
