-- +goose Up
-- Each artifact records the version of the prompt it was asked with (a short
-- hash of the stage's instructions and schema; '' for older artifacts) and
-- the statistics of its generation (a JSON object: calls, batches,
-- first_try_valid, invalid_answers, repair_turns, prompt_tokens,
-- completion_tokens, duration_ms, findings_by_kind, temperature, seed; NULL
-- for older artifacts).
ALTER TABLE spec_artifacts ADD COLUMN prompt_version TEXT NOT NULL DEFAULT '';
ALTER TABLE spec_artifacts ADD COLUMN generation TEXT;

-- +goose Down
ALTER TABLE spec_artifacts DROP COLUMN generation;
ALTER TABLE spec_artifacts DROP COLUMN prompt_version;
