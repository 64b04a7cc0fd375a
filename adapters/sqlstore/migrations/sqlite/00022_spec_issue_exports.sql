-- +goose Up
-- Exports of a specification session to the issues of a connected
-- repository, run in the background, with their progress. At most one
-- export of a session to a repository is queued or running at a time.
-- repo_id is devpilot's repository id; not a foreign key, as a repository a
-- later listing no longer shows is pruned.
CREATE TABLE spec_issue_exports (
    id           TEXT NOT NULL PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES spec_sessions (id) ON DELETE CASCADE,
    org_id       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    repo_id      TEXT NOT NULL,
    include_prps INTEGER NOT NULL DEFAULT 0 CHECK (include_prps IN (0, 1)),
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    total        INTEGER NOT NULL DEFAULT 0,
    done         INTEGER NOT NULL DEFAULT 0,
    error        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX spec_issue_exports_active ON spec_issue_exports (session_id, repo_id)
    WHERE status IN ('queued', 'running');

-- The issues exports created, per session, repository and the ref (epic,
-- story or PRP id) each stands for: the next export updates them.
CREATE TABLE spec_exported_issues (
    session_id TEXT NOT NULL REFERENCES spec_sessions (id) ON DELETE CASCADE,
    repo_id    TEXT NOT NULL,
    ref        TEXT NOT NULL,
    kind       TEXT NOT NULL,
    number     INTEGER NOT NULL,
    html_url   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session_id, repo_id, ref)
) STRICT;

-- +goose Down
DROP TABLE spec_exported_issues;
DROP TABLE spec_issue_exports;
