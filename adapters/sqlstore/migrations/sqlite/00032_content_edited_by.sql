-- +goose Up
-- A content item whose title or body a person changed (PUT /content/{id})
-- records who: their user id and their name (the email) at the time; both
-- '' while the text is the model's.
ALTER TABLE content_items ADD COLUMN edited_by TEXT NOT NULL DEFAULT '';
ALTER TABLE content_items ADD COLUMN edited_by_name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE content_items DROP COLUMN edited_by_name;
ALTER TABLE content_items DROP COLUMN edited_by;
