-- JSON columns are TEXT, so the bytes a store is given are the bytes it
-- returns; NULL stands for an empty json.RawMessage.

-- +goose Up
CREATE TABLE chat_sessions (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL,
    title      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (id, org_id, user_id),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
);

CREATE INDEX chat_sessions_owner_updated_at_idx ON chat_sessions (org_id, user_id, updated_at DESC, id DESC);

CREATE TABLE chat_messages (
    position     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- append order
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    turn_id      TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT, -- [{"id","name","arguments"}], arguments as the model's text
    tool_call_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE INDEX chat_messages_session_id_position_idx ON chat_messages (session_id, position);

CREATE TABLE confirmations (
    id             TEXT NOT NULL PRIMARY KEY,
    session_id     TEXT NOT NULL,
    org_id         TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    turn_id        TEXT NOT NULL,
    tool_call_id   TEXT NOT NULL,
    tool_name      TEXT NOT NULL,
    arguments      TEXT,
    summary        TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    decided_at     TIMESTAMPTZ,
    decided_by     TEXT NOT NULL DEFAULT '',
    reason         TEXT NOT NULL DEFAULT '',
    outcome_ok     BOOLEAN, -- NULL until an outcome is recorded
    outcome_result TEXT,
    outcome_error  TEXT NOT NULL DEFAULT '',
    executed_at    TIMESTAMPTZ,
    FOREIGN KEY (session_id, org_id, user_id) REFERENCES chat_sessions (id, org_id, user_id) ON DELETE CASCADE
);

CREATE INDEX confirmations_session_id_status_idx ON confirmations (session_id, status);
CREATE INDEX confirmations_pending_expires_at_idx ON confirmations (expires_at) WHERE status = 'pending';

CREATE TABLE stream_events (
    session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    turn_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    data       TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE turns (
    id         TEXT NOT NULL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    started_at TIMESTAMPTZ NOT NULL,
    ended_at   TIMESTAMPTZ
);

CREATE INDEX turns_session_id_idx ON turns (session_id);
-- At most one running turn per session.
CREATE UNIQUE INDEX turns_running_session_id_idx ON turns (session_id) WHERE ended_at IS NULL;

CREATE TABLE preference_sets (
    user_id    TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, org_id),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
);

CREATE TABLE preferences (
    id          TEXT NOT NULL PRIMARY KEY,
    user_id     TEXT NOT NULL,
    org_id      TEXT NOT NULL,
    position    INTEGER NOT NULL,
    instruction TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (user_id, org_id, position),
    FOREIGN KEY (user_id, org_id) REFERENCES preference_sets (user_id, org_id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE preferences;
DROP TABLE preference_sets;
DROP TABLE turns;
DROP TABLE stream_events;
DROP TABLE confirmations;
DROP TABLE chat_messages;
DROP TABLE chat_sessions;
