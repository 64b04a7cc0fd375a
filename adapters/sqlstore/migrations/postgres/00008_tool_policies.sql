-- +goose Up
-- An organisation's policy for one assistant tool: with always_confirm TRUE,
-- every call of the tool waits for a human decision, as a write does. Rows
-- are kept when unset (FALSE), recording who changed the policy and when.
CREATE TABLE tool_policies (
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    tool           TEXT COLLATE "C" NOT NULL,
    always_confirm BOOLEAN NOT NULL,
    updated_by     TEXT NOT NULL, -- a user id, kept after the user is gone
    updated_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, tool)
);

-- +goose Down
DROP TABLE tool_policies;
