-- +goose Up
-- A member an admin removed from the organisation: kept (their records and
-- the audit log name them), refused authentication, and left out of the
-- member list.
ALTER TABLE users ADD COLUMN removed_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE users DROP COLUMN removed_at;
