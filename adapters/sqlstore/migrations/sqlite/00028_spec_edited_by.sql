-- +goose Up
-- An artifact written by hand (PUT /pse/sessions/{id}/stages/{stage})
-- records the id of the user who wrote it; '' for one a model generated.
ALTER TABLE spec_artifacts ADD COLUMN edited_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE spec_artifacts DROP COLUMN edited_by;
