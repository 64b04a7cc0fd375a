-- +goose NO TRANSACTION
-- Only what an identity provider (or the operator) proved keeps an email
-- unique: users.email_verified marks such users, and only they must have
-- distinct emails. A user who joined through an invitation is unverified
-- (an invitation proves that its holder had the link, not that they own the
-- mailbox), may share an email with anyone, and is never reached by an
-- email match at sign-in. identity_links ties a provider's iss+sub to the
-- user it signs in as.
--
-- SQLite cannot drop a column's UNIQUE constraint, so users is rebuilt the
-- way SQLite documents (foreign keys off, one transaction, rename, checked):
-- with foreign keys on, dropping the table would cascade to every row that
-- references a user. The migration runs on the writer's one connection.

-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE users_new (
    id             TEXT NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    email          TEXT NOT NULL, -- lower-cased by the store
    email_verified INTEGER NOT NULL CHECK (email_verified IN (0, 1)),
    role           TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at     TEXT NOT NULL,
    removed_at     TEXT,
    UNIQUE (id, org_id)
) STRICT;

-- Users so far: unverified when they joined through an invitation and have
-- never signed in through the identity provider (a sign-in proved the
-- email to be theirs).
INSERT INTO users_new (id, org_id, email, email_verified, role, created_at, removed_at)
SELECT u.id, u.org_id, u.email,
       CASE WHEN EXISTS (SELECT 1 FROM invitations i WHERE i.accepted_by = u.id)
             AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.user_id = u.id AND a.action = 'session.sign_in')
             AND NOT EXISTS (SELECT 1 FROM api_tokens t WHERE t.user_id = u.id AND t.kind = 'session')
            THEN 0 ELSE 1 END,
       u.role, u.created_at, u.removed_at
FROM users u;

DROP TABLE users;
ALTER TABLE users_new RENAME TO users;

CREATE INDEX users_org_id_idx ON users (org_id);
CREATE INDEX users_email_idx ON users (email);
CREATE UNIQUE INDEX users_verified_email_key ON users (email) WHERE email_verified = 1;

CREATE TABLE identity_links (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (issuer, subject),
    UNIQUE (user_id, issuer)
) STRICT;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

DROP TABLE identity_links;

CREATE TABLE users_old (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    email      TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at TEXT NOT NULL,
    removed_at TEXT,
    UNIQUE (id, org_id)
) STRICT;

-- Fails when an unverified user shares an email, as the old schema cannot
-- hold both.
INSERT INTO users_old (id, org_id, email, role, created_at, removed_at)
SELECT id, org_id, email, role, created_at, removed_at FROM users;

DROP TABLE users;
ALTER TABLE users_old RENAME TO users;
CREATE INDEX users_org_id_idx ON users (org_id);

COMMIT;
PRAGMA foreign_keys = ON;
