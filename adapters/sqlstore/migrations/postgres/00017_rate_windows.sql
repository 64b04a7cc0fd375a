-- +goose Up
-- The request counter of each rate-limit key (one per user for the costly
-- routes) in its current fixed window: window_start is the window's start
-- in Unix milliseconds, n the requests counted in it. A take in a later
-- window starts the row's count again, so the table holds one row per key
-- and needs no sweeping.
CREATE TABLE rate_windows (
    rate_key     TEXT NOT NULL PRIMARY KEY,
    window_start BIGINT NOT NULL,
    n            BIGINT NOT NULL
);

-- +goose Down
DROP TABLE rate_windows;
