-- +goose Up
-- The tokens models used, per organisation, user, model, feature (chat,
-- title, spec, content, voice) and UTC day (YYYY-MM-DD): one row a day for
-- each, added to after every model call, so that a month's usage is a sum
-- over at most a few thousand rows. user_id is '' for calls made for no user.
CREATE TABLE usage_daily (
    org_id            TEXT NOT NULL,
    day               TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    model             TEXT NOT NULL,
    feature           TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    calls             INTEGER NOT NULL,
    PRIMARY KEY (org_id, day, user_id, model, feature)
) STRICT;

-- +goose Down
DROP TABLE usage_daily;
