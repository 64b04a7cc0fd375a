-- +goose Up
-- Console sign-in sessions are stored as tokens of kind 'session' beside the
-- API tokens (kind 'api'): one hash look-up, one revocation path, one watch.
ALTER TABLE api_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN kind;
