package ports

import (
	"context"
	"encoding/json"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/mcp.go -package mocks . MCPServerStore,MCPClient

// MCPServer is a remote MCP server an organisation registered, whose tools
// the assistant offers (namespaced by Name). Its headers (credentials, most
// often) are kept sealed: HeaderNames says which there are, SealedHeaders
// holds their values as JSON sealed with the Cipher (aad: the server's id),
// "" when there are none.
type MCPServer struct {
	ID            string
	OrgID         string
	Name          string
	URL           string
	HeaderNames   []string
	SealedHeaders string
	CreatedBy     string
	CreatedAt     time.Time
	// ToolCount and LastError are what the server's last listing found (a
	// test, or an assistant turn): its number of tools, and why it failed
	// ("" when it did not).
	ToolCount int
	LastError string
}

// MCPToolPolicy is an organisation's rule for one tool of one of its MCP
// servers (Tool is the server's own name of it).
type MCPToolPolicy struct {
	OrgID     string
	ServerID  string
	Tool      string
	Policy    MCPPolicy
	UpdatedBy string
	UpdatedAt time.Time
}

// MCPPolicy is what an organisation decided for a tool of an MCP server.
type MCPPolicy string

// The policies of an MCP tool: default follows the server's annotations
// (a tool not annotated readOnlyHint waits for approval), always_confirm
// makes every call wait, disabled hides the tool from the assistant.
const (
	MCPPolicyDefault       MCPPolicy = "default"
	MCPPolicyAlwaysConfirm MCPPolicy = "always_confirm"
	MCPPolicyDisabled      MCPPolicy = "disabled"
)

// Valid reports whether p is one of the policies.
func (p MCPPolicy) Valid() bool {
	return p == MCPPolicyDefault || p == MCPPolicyAlwaysConfirm || p == MCPPolicyDisabled
}

// MCPServerStore keeps organisations' MCP servers and their tool policies.
type MCPServerStore interface {
	// CreateMCPServer stores a new server. Errors: conflict when the org
	// has a server of that name; not_found when the org does not exist.
	CreateMCPServer(ctx context.Context, s MCPServer) error
	// GetMCPServer returns the org's server. Errors: not_found when absent
	// or another org's.
	GetMCPServer(ctx context.Context, orgID, id string) (MCPServer, error)
	// ListMCPServers returns the org's servers ordered by name; nil when
	// none.
	ListMCPServers(ctx context.Context, orgID string) ([]MCPServer, error)
	// DeleteMCPServer deletes the org's server and its tool policies.
	// Errors: not_found when absent or another org's.
	DeleteMCPServer(ctx context.Context, orgID, id string) error
	// RecordMCPServerStatus records what the server's last listing found.
	// A server deleted meanwhile is not an error.
	RecordMCPServerStatus(ctx context.Context, orgID, id string, toolCount int, lastError string) error
	// SetMCPToolPolicy sets the policy of one tool of the org's server,
	// replacing the one there. Errors: not_found when the server is absent
	// or another org's.
	SetMCPToolPolicy(ctx context.Context, p MCPToolPolicy) error
	// ListMCPToolPolicies returns the policies of the org's servers, by
	// server id then tool; nil when none.
	ListMCPToolPolicies(ctx context.Context, orgID string) ([]MCPToolPolicy, error)
}

// MCPEndpoint is how to reach one MCP server: its address, the headers to
// send (opened), and the id of its record, which keys caches.
type MCPEndpoint struct {
	ServerID string
	URL      string
	Headers  map[string]string
}

// MCPTool is a tool an MCP server lists: its own name, description,
// the JSON Schema of its arguments and the annotations devpilot uses.
type MCPTool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	ReadOnly    bool
	Destructive bool
}

// MCPResult is what a tool call answered: its text (the text content, and
// the structured content when there is no text), bounded in size;
// Truncated when some was cut; IsError when the tool reported a failure.
type MCPResult struct {
	Text      string
	IsError   bool
	Truncated bool
}

// MCPClient talks to remote MCP servers over Streamable HTTP. Errors of
// both methods: unavailable when the server cannot be reached or breaks
// off; timeout when it does not answer in time; upstream when it answers
// with a protocol error or an answer too large; invalid for an address the
// address guard refuses.
type MCPClient interface {
	// ListTools returns every tool of the server (all pages), from a cache
	// kept for a bounded time and dropped when the server says its list
	// changed.
	ListTools(ctx context.Context, ep MCPEndpoint) ([]MCPTool, error)
	// Refresh is ListTools skipping the cache.
	Refresh(ctx context.Context, ep MCPEndpoint) ([]MCPTool, error)
	// CallTool calls the tool named name (the server's name) with args, a
	// JSON object.
	CallTool(ctx context.Context, ep MCPEndpoint, name string, args json.RawMessage) (MCPResult, error)
}
