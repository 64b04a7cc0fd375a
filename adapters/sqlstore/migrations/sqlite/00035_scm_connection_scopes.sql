-- +goose Up
-- The OAuth scopes the provider granted a connection's token, as it named
-- them ("repo,read:user"); '' for connections made before this was kept
-- (GET /scm/connection shows them).
ALTER TABLE scm_connections ADD COLUMN scopes TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE scm_connections DROP COLUMN scopes;
