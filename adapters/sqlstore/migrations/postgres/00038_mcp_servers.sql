-- +goose Up
-- Remote MCP servers an organisation registered for its assistant. name
-- prefixes the server's tool names (unique per org); header_names is a JSON
-- array of the names of the headers sent to it, sealed_headers their
-- values as JSON sealed by the app's cipher ('' when none); tool_count and
-- last_error are what its last listing found.
CREATE TABLE mcp_servers (
    id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    name           TEXT COLLATE "C" NOT NULL,
    url            TEXT NOT NULL,
    header_names   TEXT NOT NULL DEFAULT '[]',
    sealed_headers TEXT NOT NULL DEFAULT '',
    created_by     TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    tool_count     INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT NOT NULL DEFAULT '',
    UNIQUE (org_id, name)
);

-- An organisation's policy of one tool (the server's name of it) of one of
-- its MCP servers.
CREATE TABLE mcp_tool_policies (
    server_id  TEXT COLLATE "C" NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    org_id     TEXT NOT NULL,
    tool       TEXT COLLATE "C" NOT NULL,
    policy     TEXT NOT NULL CHECK (policy IN ('default', 'always_confirm', 'disabled')),
    updated_by TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (server_id, tool)
);
CREATE INDEX mcp_tool_policies_org_id_idx ON mcp_tool_policies (org_id);

-- +goose Down
DROP TABLE mcp_tool_policies;
DROP TABLE mcp_servers;
