-- +goose Up
-- When a content item was last published.
ALTER TABLE content_items ADD COLUMN published_at TEXT;

-- A project's publishing targets: where its approved content can go. config
-- is a JSON object of the kind's settings; sealed_secret is the webhook's
-- signing secret or the WordPress application password, sealed.
CREATE TABLE content_targets (
    id            TEXT NOT NULL PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    project_id    TEXT NOT NULL,
    name          TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('webhook', 'wordpress', 'github_file')),
    config        TEXT NOT NULL,
    sealed_secret TEXT NOT NULL DEFAULT '',
    created_by    TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    UNIQUE (org_id, project_id, name)
) STRICT;

-- A request to publish a content item to a target, now or at run_at, with
-- its attempts (a JSON array of {"at","outcome","remote_url","error"}). The
-- target's name and kind are kept for when the target is deleted.
CREATE TABLE content_publications (
    id          TEXT NOT NULL PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    item_id     TEXT NOT NULL REFERENCES content_items (id) ON DELETE CASCADE,
    target_id   TEXT NOT NULL,
    target_name TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at      TEXT NOT NULL,
    attempts    TEXT NOT NULL,
    remote_url  TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    finished_at TEXT
) STRICT;

CREATE INDEX content_publications_item_id_created_at_idx ON content_publications (item_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE content_publications;
DROP TABLE content_targets;
ALTER TABLE content_items DROP COLUMN published_at;
