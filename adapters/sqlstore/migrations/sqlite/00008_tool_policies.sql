-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order. Text compares bytewise (BINARY), as in the
-- PostgreSQL tree (COLLATE "C").

-- +goose Up
-- An organisation's policy for one assistant tool: with always_confirm 1,
-- every call of the tool waits for a human decision, as a write does. Rows
-- are kept when unset (0), recording who changed the policy and when.
CREATE TABLE tool_policies (
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    tool           TEXT NOT NULL,
    always_confirm INTEGER NOT NULL CHECK (always_confirm IN (0, 1)),
    updated_by     TEXT NOT NULL, -- a user id, kept after the user is gone
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (org_id, tool)
) STRICT;

-- +goose Down
DROP TABLE tool_policies;
