-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order. Lists and maps are TEXT holding a JSON array or
-- object ('[]' and '{}' when empty). Text compares bytewise (BINARY), as in
-- the PostgreSQL tree (COLLATE "C"). An absent text is ''.

-- +goose Up
-- A project's brand settings, replaced whole: version guards the replacement
-- (a compare-and-set on it).
CREATE TABLE content_brands (
    org_id          TEXT NOT NULL REFERENCES orgs (id),
    project_id      TEXT NOT NULL,
    name            TEXT NOT NULL DEFAULT '',
    voice           TEXT NOT NULL DEFAULT '',
    tone            TEXT NOT NULL, -- a JSON array of strings
    audience        TEXT NOT NULL DEFAULT '',
    brand_values    TEXT NOT NULL, -- a JSON array of strings (Brand.Values)
    banned_words    TEXT NOT NULL, -- a JSON array of strings
    preferred_terms TEXT NOT NULL, -- a JSON object: avoided term → preferred term
    style_guide     TEXT NOT NULL DEFAULT '',
    examples        TEXT NOT NULL, -- a JSON array of strings
    version         INTEGER NOT NULL CHECK (version >= 1),
    updated_by      TEXT NOT NULL DEFAULT '', -- a user id, kept when the user is gone
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (org_id, project_id)
) STRICT;

CREATE TABLE content_briefs (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    project_id TEXT NOT NULL,
    created_by TEXT NOT NULL DEFAULT '', -- a user id, kept when the user is gone
    title      TEXT NOT NULL,
    goal       TEXT NOT NULL DEFAULT '',
    audience   TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL DEFAULT '',
    format     TEXT NOT NULL DEFAULT '',
    keywords   TEXT NOT NULL, -- a JSON array of strings
    cta        TEXT NOT NULL DEFAULT '',
    min_words  INTEGER NOT NULL DEFAULT 0, -- 0 is unbounded
    max_words  INTEGER NOT NULL DEFAULT 0, -- 0 is unbounded
    notes      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (id, org_id) -- what content items refer to, so an item is its brief's org's
) STRICT;

CREATE INDEX content_briefs_org_id_created_at_idx ON content_briefs (org_id, created_at DESC, id DESC);
CREATE INDEX content_briefs_org_id_project_id_created_at_idx ON content_briefs (org_id, project_id, created_at DESC, id DESC);

-- A content item; version counts every change and guards updates (a
-- compare-and-set on it).
CREATE TABLE content_items (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    project_id TEXT NOT NULL,
    brief_id   TEXT NOT NULL,
    created_by TEXT NOT NULL DEFAULT '', -- a user id, kept when the user is gone
    title      TEXT NOT NULL DEFAULT '',
    body       TEXT NOT NULL DEFAULT '',
    format     TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL CHECK (status IN ('generating', 'draft', 'in_review', 'approved', 'published', 'archived', 'failed')),
    checks     TEXT NOT NULL, -- a JSON array of {"kind","term","message"}
    error      TEXT,          -- {"code","message"} of a failed generation
    variant    INTEGER NOT NULL DEFAULT 0,
    model      TEXT NOT NULL DEFAULT '',
    version    INTEGER NOT NULL CHECK (version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    FOREIGN KEY (brief_id, org_id) REFERENCES content_briefs (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX content_items_org_id_updated_at_idx ON content_items (org_id, updated_at DESC, id DESC);
CREATE INDEX content_items_org_id_project_id_updated_at_idx ON content_items (org_id, project_id, updated_at DESC, id DESC);
CREATE INDEX content_items_org_id_status_updated_at_idx ON content_items (org_id, status, updated_at DESC, id DESC);
-- Also serves the foreign key's cascade from content_briefs.
CREATE INDEX content_items_brief_id_updated_at_idx ON content_items (brief_id, updated_at DESC, id DESC);

-- +goose Down
DROP TABLE content_items;
DROP TABLE content_briefs;
DROP TABLE content_brands;
