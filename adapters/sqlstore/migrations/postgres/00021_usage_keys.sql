-- +goose Up
-- The keys of the usage records added once (a realtime call's responses,
-- which the sideband may report again after a reconnect): a record whose
-- key is here was counted in usage_daily already. day is the UTC day it was
-- counted on (YYYY-MM-DD), so old keys can be pruned by day.
CREATE TABLE usage_keys (
    usage_key TEXT NOT NULL PRIMARY KEY,
    day       TEXT NOT NULL
);

-- +goose Down
DROP TABLE usage_keys;
