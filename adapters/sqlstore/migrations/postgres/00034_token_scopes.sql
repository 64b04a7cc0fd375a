-- +goose Up
-- API tokens are scoped: a space-separated list of scopes ("read write",
-- "cloud:read spec", ...). Tokens made before scopes keep what they could do.
ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'read write';

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN scopes;
