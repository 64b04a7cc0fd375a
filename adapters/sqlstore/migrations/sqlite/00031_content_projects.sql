-- +goose Up
-- A content project of an org, with a name unique in the org ignoring case
-- (name_key is ports.ContentProjectNameKey of the name); version guards
-- updates (a compare-and-set on it).
CREATE TABLE content_projects (
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_by  TEXT NOT NULL DEFAULT '', -- a user id, kept when the user is gone
    version     INTEGER NOT NULL CHECK (version >= 1),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, name_key)
) STRICT;

-- Every project id already in use gets a project named after it, created
-- when it was first used. Ids are ASCII without spaces, so lower() is their
-- name key. Ids of one org that differ only in case would share a name:
-- the first used keeps its id as the name, the others get their id's hex
-- appended, which no id can spell.
CREATE TEMP TABLE content_project_ids AS
SELECT org_id, project_id, MIN(at) AS first_at FROM (
    SELECT org_id, project_id, updated_at AS at FROM content_brands
    UNION ALL SELECT org_id, project_id, created_at FROM content_briefs
    UNION ALL SELECT org_id, project_id, created_at FROM content_items
    UNION ALL SELECT org_id, project_id, created_at FROM content_targets
) GROUP BY org_id, project_id;

INSERT INTO content_projects (org_id, id, name, name_key, version, created_at, updated_at)
SELECT org_id, project_id, project_id, lower(project_id), 1, first_at, first_at
FROM content_project_ids WHERE true ORDER BY org_id, first_at, project_id
ON CONFLICT DO NOTHING;

INSERT INTO content_projects (org_id, id, name, name_key, version, created_at, updated_at)
SELECT u.org_id, u.project_id, u.project_id || ' (' || lower(hex(u.project_id)) || ')',
    lower(u.project_id) || ' (' || lower(hex(u.project_id)) || ')', 1, u.first_at, u.first_at
FROM content_project_ids u
WHERE NOT EXISTS (SELECT 1 FROM content_projects p WHERE p.org_id = u.org_id AND p.id = u.project_id);

DROP TABLE content_project_ids;

-- +goose Down
DROP TABLE content_projects;
