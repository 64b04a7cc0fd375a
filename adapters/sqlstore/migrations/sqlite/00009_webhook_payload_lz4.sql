-- +goose Up
-- The PostgreSQL tree compresses webhook payloads with LZ4 here; SQLite
-- stores them as they are, so there is nothing to change. The step keeps the
-- two trees at the same version.
SELECT 1;

-- +goose Down
SELECT 1;
