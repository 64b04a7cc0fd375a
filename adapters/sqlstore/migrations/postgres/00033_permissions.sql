-- +goose Up
-- The operator role: runs the writes the permission policy gives it (by
-- default cloud writes and publishing) without administering the org.
ALTER TABLE users DROP CONSTRAINT users_role_check;
ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('admin', 'operator', 'member'));
ALTER TABLE invitations DROP CONSTRAINT invitations_role_check;
ALTER TABLE invitations ADD CONSTRAINT invitations_role_check CHECK (role IN ('admin', 'operator', 'member'));

-- An organisation's choice of the roles allowed one permission (such as
-- cloud.scale), replacing the permission's defaults. roles is the allowed
-- roles, comma-separated ('' for none).
CREATE TABLE permission_grants (
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    permission TEXT COLLATE "C" NOT NULL,
    roles      TEXT NOT NULL,
    updated_by TEXT NOT NULL, -- a user id, kept after the user is gone
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, permission)
);

-- +goose Down
DROP TABLE permission_grants;
-- Fails while an operator or an invitation to be one exists.
ALTER TABLE invitations DROP CONSTRAINT invitations_role_check;
ALTER TABLE invitations ADD CONSTRAINT invitations_role_check CHECK (role IN ('admin', 'member'));
ALTER TABLE users DROP CONSTRAINT users_role_check;
ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('admin', 'member'));
