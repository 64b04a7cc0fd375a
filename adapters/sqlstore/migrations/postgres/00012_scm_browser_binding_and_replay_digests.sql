-- +goose Up
-- An OAuth state is bound to the browser that started it: the SHA-256 (hex)
-- of a secret kept in that browser's cookie, which the callback must bring.
-- States stored before this step have none, and are refused by the callback.
ALTER TABLE oauth_states ADD COLUMN binding_hash TEXT NOT NULL DEFAULT '';

-- The commit an activity entry leads to: a push's head commit.
ALTER TABLE scm_activity ADD COLUMN sha TEXT NOT NULL DEFAULT '';

-- The digest of each webhook delivery's event and raw body, so that a signed
-- body replayed under a new delivery id within the replay window is not
-- processed again. One row per digest: a digest seen again after the window
-- takes the row over (INSERT … ON CONFLICT DO UPDATE … WHERE).
CREATE TABLE webhook_digests (
    digest      TEXT COLLATE "C" NOT NULL PRIMARY KEY, -- hex SHA-256
    delivery_id TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE webhook_digests;
ALTER TABLE scm_activity DROP COLUMN sha;
ALTER TABLE oauth_states DROP COLUMN binding_hash;
