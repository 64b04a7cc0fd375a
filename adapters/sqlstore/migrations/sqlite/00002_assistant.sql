-- Timestamps are TEXT in the fixed-width RFC 3339 UTC layout of timestamp.go,
-- so text order is time order. JSON columns are TEXT, so the bytes a store is
-- given are the bytes it returns; NULL stands for an empty json.RawMessage.

-- +goose Up
CREATE TABLE chat_sessions (
    id         TEXT NOT NULL PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL,
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (id, org_id, user_id),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX chat_sessions_owner_updated_at_idx ON chat_sessions (org_id, user_id, updated_at DESC, id DESC);

CREATE TABLE chat_messages (
    position     INTEGER PRIMARY KEY, -- the rowid: one more than the highest, so append order
    id           TEXT NOT NULL UNIQUE,
    session_id   TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    turn_id      TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT, -- [{"id","name","arguments"}], arguments as the model's text
    tool_call_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;

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
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    decided_at     TEXT,
    decided_by     TEXT NOT NULL DEFAULT '',
    reason         TEXT NOT NULL DEFAULT '',
    outcome_ok     INTEGER CHECK (outcome_ok IN (0, 1)), -- NULL until an outcome is recorded
    outcome_result TEXT,
    outcome_error  TEXT NOT NULL DEFAULT '',
    executed_at    TEXT,
    FOREIGN KEY (session_id, org_id, user_id) REFERENCES chat_sessions (id, org_id, user_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX confirmations_session_id_status_idx ON confirmations (session_id, status);
CREATE INDEX confirmations_pending_expires_at_idx ON confirmations (expires_at) WHERE status = 'pending';

CREATE TABLE stream_events (
    session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    data       TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

CREATE TABLE turns (
    id         TEXT NOT NULL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    started_at TEXT NOT NULL,
    ended_at   TEXT
) STRICT;

CREATE INDEX turns_session_id_idx ON turns (session_id);
-- At most one running turn per session.
CREATE UNIQUE INDEX turns_running_session_id_idx ON turns (session_id) WHERE ended_at IS NULL;

CREATE TABLE preference_sets (
    user_id    TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, org_id),
    FOREIGN KEY (user_id, org_id) REFERENCES users (id, org_id) ON DELETE CASCADE
) STRICT;

CREATE TABLE preferences (
    id          TEXT NOT NULL PRIMARY KEY,
    user_id     TEXT NOT NULL,
    org_id      TEXT NOT NULL,
    position    INTEGER NOT NULL,
    instruction TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (user_id, org_id, position),
    FOREIGN KEY (user_id, org_id) REFERENCES preference_sets (user_id, org_id) ON DELETE CASCADE
) STRICT;

-- +goose Down
DROP TABLE preferences;
DROP TABLE preference_sets;
DROP TABLE turns;
DROP TABLE stream_events;
DROP TABLE confirmations;
DROP TABLE chat_messages;
DROP TABLE chat_sessions;
