package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.MCPServerStore = (*MCPServers)(nil)

// MCPServers keeps organisations' MCP servers and their tool policies; it
// implements ports.MCPServerStore, with the errors that port documents.
type MCPServers struct {
	db *DB
}

// NewMCPServers returns the MCP server store over db.
func NewMCPServers(db *DB) *MCPServers { return &MCPServers{db: db} }

const mcpServerColumns = "id, org_id, name, url, header_names, sealed_headers, created_by, created_at, tool_count, last_error"

type mcpServerRow struct {
	ID            string    `db:"id"`
	OrgID         string    `db:"org_id"`
	Name          string    `db:"name"`
	URL           string    `db:"url"`
	HeaderNames   string    `db:"header_names"`
	SealedHeaders string    `db:"sealed_headers"`
	CreatedBy     string    `db:"created_by"`
	CreatedAt     timestamp `db:"created_at"`
	ToolCount     int       `db:"tool_count"`
	LastError     string    `db:"last_error"`
}

func (r mcpServerRow) server() (ports.MCPServer, error) {
	names := []string{}
	if err := json.Unmarshal([]byte(r.HeaderNames), &names); err != nil {
		return ports.MCPServer{}, ports.Wrap(ports.KindInternal, err, "decode the header names of MCP server "+r.ID)
	}
	return ports.MCPServer{ID: r.ID, OrgID: r.OrgID, Name: r.Name, URL: r.URL, HeaderNames: names,
		SealedHeaders: r.SealedHeaders, CreatedBy: r.CreatedBy, CreatedAt: time.Time(r.CreatedAt),
		ToolCount: r.ToolCount, LastError: r.LastError}, nil
}

// CreateMCPServer implements ports.MCPServerStore.
func (s *MCPServers) CreateMCPServer(ctx context.Context, m ports.MCPServer) error {
	names, err := encodeList(m.HeaderNames)
	if err != nil {
		return err
	}
	_, err = s.db.write(ctx).exec(ctx, "INSERT INTO mcp_servers ("+mcpServerColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.ID, m.OrgID, m.Name, m.URL, names, m.SealedHeaders, m.CreatedBy, timestamp(m.CreatedAt), m.ToolCount,
		strings.ToValidUTF8(m.LastError, ""))
	return storeErr(err, "MCP server "+strings.ToValidUTF8(m.Name, ""), "org "+m.OrgID)
}

// GetMCPServer implements ports.MCPServerStore.
func (s *MCPServers) GetMCPServer(ctx context.Context, orgID, id string) (ports.MCPServer, error) {
	var r mcpServerRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+mcpServerColumns+" FROM mcp_servers WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.MCPServer{}, storeErr(err, "MCP server "+id, "")
	}
	return r.server()
}

// ListMCPServers implements ports.MCPServerStore.
func (s *MCPServers) ListMCPServers(ctx context.Context, orgID string) ([]ports.MCPServer, error) {
	var rows []mcpServerRow
	err := s.db.read(ctx).list(ctx, &rows, "SELECT "+mcpServerColumns+" FROM mcp_servers WHERE org_id = ? ORDER BY name", orgID)
	if err != nil {
		return nil, storeErr(err, "MCP servers", "")
	}
	var out []ports.MCPServer
	for _, r := range rows {
		m, err := r.server()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// DeleteMCPServer implements ports.MCPServerStore; the policies go with
// the server (ON DELETE CASCADE, and explicitly, for a database whose
// foreign keys are off).
func (s *MCPServers) DeleteMCPServer(ctx context.Context, orgID, id string) error {
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		if _, err := s.db.write(ctx).exec(ctx, "DELETE FROM mcp_tool_policies WHERE server_id = ? AND org_id = ?", id, orgID); err != nil {
			return storeErr(err, "MCP tool policies", "")
		}
		n, err := s.db.write(ctx).exec(ctx, "DELETE FROM mcp_servers WHERE id = ? AND org_id = ?", id, orgID)
		if err == nil && n == 0 {
			return ports.NotFound("MCP server", id)
		}
		return storeErr(err, "MCP server "+id, "")
	})
}

// RecordMCPServerStatus implements ports.MCPServerStore.
func (s *MCPServers) RecordMCPServerStatus(ctx context.Context, orgID, id string, toolCount int, lastError string) error {
	_, err := s.db.write(ctx).exec(ctx, "UPDATE mcp_servers SET tool_count = ?, last_error = ? WHERE id = ? AND org_id = ?",
		toolCount, strings.ToValidUTF8(lastError, ""), id, orgID)
	return storeErr(err, "MCP server "+id, "")
}

type mcpPolicyRow struct {
	ServerID  string    `db:"server_id"`
	OrgID     string    `db:"org_id"`
	Tool      string    `db:"tool"`
	Policy    string    `db:"policy"`
	UpdatedBy string    `db:"updated_by"`
	UpdatedAt timestamp `db:"updated_at"`
}

// SetMCPToolPolicy implements ports.MCPServerStore with one INSERT … SELECT
// from the org's server … ON CONFLICT DO UPDATE, so a server of another org
// or none sets nothing, and concurrent calls leave the last one's policy.
func (s *MCPServers) SetMCPToolPolicy(ctx context.Context, p ports.MCPToolPolicy) error {
	n, err := s.db.write(ctx).exec(ctx, `INSERT INTO mcp_tool_policies (server_id, org_id, tool, policy, updated_by, updated_at)
		SELECT id, org_id, ?, ?, ?, ? FROM mcp_servers WHERE id = ? AND org_id = ?
		ON CONFLICT (server_id, tool) DO UPDATE SET policy = excluded.policy,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		p.Tool, string(p.Policy), p.UpdatedBy, timestamp(p.UpdatedAt), p.ServerID, p.OrgID)
	if err == nil && n == 0 {
		return ports.NotFound("MCP server", p.ServerID)
	}
	return storeErr(err, "MCP tool policy "+p.Tool, "MCP server "+p.ServerID)
}

// ListMCPToolPolicies implements ports.MCPServerStore.
func (s *MCPServers) ListMCPToolPolicies(ctx context.Context, orgID string) ([]ports.MCPToolPolicy, error) {
	var rows []mcpPolicyRow
	err := s.db.read(ctx).list(ctx, &rows, `SELECT server_id, org_id, tool, policy, updated_by, updated_at
		FROM mcp_tool_policies WHERE org_id = ? ORDER BY server_id, tool`, orgID)
	if err != nil {
		return nil, storeErr(err, "MCP tool policies", "")
	}
	var out []ports.MCPToolPolicy
	for _, r := range rows {
		out = append(out, ports.MCPToolPolicy{OrgID: r.OrgID, ServerID: r.ServerID, Tool: r.Tool, Policy: ports.MCPPolicy(r.Policy),
			UpdatedBy: r.UpdatedBy, UpdatedAt: time.Time(r.UpdatedAt)})
	}
	return out, nil
}
