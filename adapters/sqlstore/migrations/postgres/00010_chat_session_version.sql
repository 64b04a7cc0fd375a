-- +goose Up
-- version counts the changes that close a stretch of a session's history: a
-- turn starting or ending, activity recorded outside a turn, a new title.
-- ContinueSession reads a session while it starts a turn in it, and keeps
-- what it read only when no such change came in between.
ALTER TABLE chat_sessions ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE chat_sessions DROP COLUMN version;
