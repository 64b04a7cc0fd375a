-- +goose Up
-- An item records where and how it was published (published_via: 'target'
-- or 'elsewhere'; '' before) and the latest "publish anyway" that approved or
-- published it despite brand findings (a JSON object: reason, by, at; NULL
-- when none). A brand may make banned words block approval and publication.
ALTER TABLE content_items ADD COLUMN published_url TEXT NOT NULL DEFAULT '';
ALTER TABLE content_items ADD COLUMN published_via TEXT NOT NULL DEFAULT '';
ALTER TABLE content_items ADD COLUMN override TEXT;
ALTER TABLE content_brands ADD COLUMN banned_words_blocking BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE content_brands DROP COLUMN banned_words_blocking;
ALTER TABLE content_items DROP COLUMN override;
ALTER TABLE content_items DROP COLUMN published_via;
ALTER TABLE content_items DROP COLUMN published_url;
