-- +goose Up
-- The connected repository a specification session is grounded in: its PRPs
-- cite that repository's files and commands. devpilot's repository id, or ''
-- for none. Not a foreign key: a repository a later listing no longer shows
-- is pruned, and the session then generates without grounding.
ALTER TABLE spec_sessions ADD COLUMN repo_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE spec_sessions DROP COLUMN repo_id;
