package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.MCPServerStore = (*Store)(nil)

type mcpPolicyKey struct{ server, tool string }

// CreateMCPServer stores a new server; conflict for a name the org has,
// not_found when the org does not exist.
func (s *Store) CreateMCPServer(ctx context.Context, m ports.MCPServer) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[m.OrgID]; !ok {
		return ports.NotFound("org", m.OrgID)
	}
	for _, o := range s.mcpServers {
		if o.OrgID == m.OrgID && o.Name == m.Name || o.ID == m.ID {
			return ports.Errorf(ports.KindConflict, "MCP server %s already exists", strings.ToValidUTF8(m.Name, ""))
		}
	}
	m.CreatedAt = utc(m.CreatedAt)
	m.HeaderNames = slices.Clone(m.HeaderNames)
	if m.HeaderNames == nil {
		m.HeaderNames = []string{}
	}
	put(ctx, s, s.mcpServers, m.ID, m)
	return nil
}

// GetMCPServer returns the org's server; not_found when absent or another's.
func (s *Store) GetMCPServer(_ context.Context, orgID, id string) (ports.MCPServer, error) {
	defer s.lock()()
	m, ok := s.mcpServers[id]
	if !ok || m.OrgID != orgID {
		return ports.MCPServer{}, ports.NotFound("MCP server", id)
	}
	m.HeaderNames = slices.Clone(m.HeaderNames)
	return m, nil
}

// ListMCPServers returns the org's servers by name.
func (s *Store) ListMCPServers(_ context.Context, orgID string) ([]ports.MCPServer, error) {
	defer s.lock()()
	var out []ports.MCPServer
	for _, m := range s.mcpServers {
		if m.OrgID == orgID {
			m.HeaderNames = slices.Clone(m.HeaderNames)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b ports.MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteMCPServer deletes the org's server and its policies.
func (s *Store) DeleteMCPServer(ctx context.Context, orgID, id string) error {
	defer s.lock()()
	m, ok := s.mcpServers[id]
	if !ok || m.OrgID != orgID {
		return ports.NotFound("MCP server", id)
	}
	del(ctx, s, s.mcpServers, id)
	for k := range s.mcpPolicies {
		if k.server == id {
			del(ctx, s, s.mcpPolicies, k)
		}
	}
	return nil
}

// RecordMCPServerStatus records what the server's last listing found.
func (s *Store) RecordMCPServerStatus(ctx context.Context, orgID, id string, toolCount int, lastError string) error {
	defer s.lock()()
	m, ok := s.mcpServers[id]
	if !ok || m.OrgID != orgID {
		return nil
	}
	m.ToolCount, m.LastError = toolCount, lastError
	put(ctx, s, s.mcpServers, id, m)
	return nil
}

// SetMCPToolPolicy sets the policy of a tool of the org's server.
func (s *Store) SetMCPToolPolicy(ctx context.Context, p ports.MCPToolPolicy) error {
	defer s.lock()()
	m, ok := s.mcpServers[p.ServerID]
	if !ok || m.OrgID != p.OrgID {
		return ports.NotFound("MCP server", p.ServerID)
	}
	p.UpdatedAt = utc(p.UpdatedAt)
	put(ctx, s, s.mcpPolicies, mcpPolicyKey{p.ServerID, p.Tool}, p)
	return nil
}

// ListMCPToolPolicies returns the org's policies by server id then tool.
func (s *Store) ListMCPToolPolicies(_ context.Context, orgID string) ([]ports.MCPToolPolicy, error) {
	defer s.lock()()
	var out []ports.MCPToolPolicy
	for _, p := range s.mcpPolicies {
		if p.OrgID == orgID {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b ports.MCPToolPolicy) int {
		if c := strings.Compare(a.ServerID, b.ServerID); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
	return out, nil
}
