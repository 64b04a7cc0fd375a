-- +goose Up
-- A running turn outlives its request: it records that it is alive
-- (alive_at, its heartbeat; NULL until the first, when started_at stands for
-- it), so a turn whose process died is found and failed, and a user may ask
-- it to stop from any replica (stop_requested_at).
ALTER TABLE turns ADD COLUMN alive_at TEXT;
ALTER TABLE turns ADD COLUMN stop_requested_at TEXT;
CREATE INDEX turns_running_alive_idx ON turns (COALESCE(alive_at, started_at)) WHERE ended_at IS NULL;

-- +goose Down
DROP INDEX turns_running_alive_idx;
ALTER TABLE turns DROP COLUMN stop_requested_at;
ALTER TABLE turns DROP COLUMN alive_at;
