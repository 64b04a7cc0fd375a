-- JSON columns are TEXT, so the bytes a store is given are the bytes it
-- returns. An absent stage or generation is ''.

-- +goose Up
CREATE TABLE spec_sessions (
    id               TEXT NOT NULL PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs (id),
    user_id          TEXT NOT NULL,
    name             TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('draft', 'generating', 'ready', 'failed')),
    current_stage    TEXT NOT NULL DEFAULT '' CHECK (current_stage IN ('', 'scope', 'prd', 'epics', 'stories', 'prps')),
    generating_stage TEXT NOT NULL DEFAULT '' CHECK (generating_stage IN ('', 'scope', 'prd', 'epics', 'stories', 'prps')),
    generation_id    TEXT NOT NULL DEFAULT '',
    error            TEXT, -- {"stage","code","message"} of the last failed generation
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    -- A generating session names its stage and generation; no other does.
    CHECK (CASE WHEN status = 'generating' THEN generating_stage <> '' AND generation_id <> ''
                ELSE generating_stage = '' AND generation_id = '' END),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
);

CREATE INDEX spec_sessions_owner_updated_at_idx ON spec_sessions (org_id, user_id, updated_at DESC, id DESC);

CREATE TABLE spec_inputs (
    position     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES spec_sessions (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('document', 'transcript', 'note')),
    title        TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    content      TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE INDEX spec_inputs_session_id_position_idx ON spec_inputs (session_id, position);

CREATE TABLE spec_artifacts (
    id            TEXT NOT NULL PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES spec_sessions (id) ON DELETE CASCADE,
    stage         TEXT NOT NULL CHECK (stage IN ('scope', 'prd', 'epics', 'stories', 'prps')),
    -- The stage's place in the pipeline, so artifacts sort in pipeline order.
    stage_order   SMALLINT NOT NULL CHECK (stage_order = CASE stage
        WHEN 'scope' THEN 0 WHEN 'prd' THEN 1 WHEN 'epics' THEN 2 WHEN 'stories' THEN 3 WHEN 'prps' THEN 4 END),
    version       INTEGER NOT NULL CHECK (version >= 1),
    format        TEXT NOT NULL,
    content       TEXT NOT NULL,
    data          TEXT,
    checks        TEXT NOT NULL, -- a JSON array of strings
    model         TEXT NOT NULL,
    generation_id TEXT NOT NULL UNIQUE, -- one artifact per generation
    stale         BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (session_id, stage, version)
);

CREATE INDEX spec_artifacts_session_id_stage_order_idx ON spec_artifacts (session_id, stage_order, version);

CREATE TABLE standards (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    applies_to TEXT NOT NULL, -- a JSON array of stages
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX standards_org_id_created_at_idx ON standards (org_id, created_at, id);

-- +goose Down
DROP TABLE standards;
DROP TABLE spec_artifacts;
DROP TABLE spec_inputs;
DROP TABLE spec_sessions;
