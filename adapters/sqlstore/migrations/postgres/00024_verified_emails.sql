-- +goose Up
-- Only what an identity provider (or the operator) proved keeps an email
-- unique: users.email_verified marks such users, and only they must have
-- distinct emails. A user who joined through an invitation is unverified
-- (an invitation proves that its holder had the link, not that they own the
-- mailbox), may share an email with anyone, and is never reached by an
-- email match at sign-in. identity_links ties a provider's iss+sub to the
-- user it signs in as.
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE users ALTER COLUMN email_verified DROP DEFAULT;

-- Users so far: unverified when they joined through an invitation and have
-- never signed in through the identity provider (a sign-in proved the
-- email to be theirs).
UPDATE users u SET email_verified = FALSE
WHERE EXISTS (SELECT 1 FROM invitations i WHERE i.accepted_by = u.id)
  AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.user_id = u.id AND a.action = 'session.sign_in')
  AND NOT EXISTS (SELECT 1 FROM api_tokens t WHERE t.user_id = u.id AND t.kind = 'session');

ALTER TABLE users DROP CONSTRAINT users_email_key;
CREATE INDEX users_email_idx ON users (email);
CREATE UNIQUE INDEX users_verified_email_key ON users (email) WHERE email_verified;

CREATE TABLE identity_links (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issuer, subject),
    UNIQUE (user_id, issuer)
);

-- +goose Down
DROP TABLE identity_links;
DROP INDEX users_verified_email_key;
DROP INDEX users_email_idx;
-- Fails when an unverified user shares an email, as the old schema cannot
-- hold both.
ALTER TABLE users ADD CONSTRAINT users_email_key UNIQUE (email);
ALTER TABLE users DROP COLUMN email_verified;
