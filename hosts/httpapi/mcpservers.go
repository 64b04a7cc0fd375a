package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/mcptools"
	"github.com/devpilot/devpilot/ports"
)

// MCPServers is the MCP client core as the transport calls it: an
// organisation's remote MCP servers, for its admins.
type MCPServers interface {
	CreateServer(ctx context.Context, in mcptools.ServerInput) (ports.MCPServer, error)
	ListServers(ctx context.Context, page ports.Page) ([]ports.MCPServer, string, error)
	DeleteServer(ctx context.Context, id string) error
	TestServer(ctx context.Context, id string) (mcptools.TestResult, error)
	Tools(ctx context.Context, id string) ([]mcptools.ToolInfo, string, error)
	SetToolPolicy(ctx context.Context, id, remote string, pol ports.MCPPolicy) (mcptools.ToolInfo, error)
}

// mcpServerRoutes serves the admin API of the organisation's remote MCP
// servers (devpilot as an MCP client).
func (s *Server) mcpServerRoutes() {
	s.handle(http.MethodPost, "/api/v1/mcp/servers", s.createMCPServer)
	s.handle(http.MethodGet, "/api/v1/mcp/servers", s.listMCPServers)
	s.handle(http.MethodDelete, "/api/v1/mcp/servers/:server_id", s.deleteMCPServer)
	s.handle(http.MethodPost, "/api/v1/mcp/servers/:server_id/test", s.testMCPServer)
	s.handle(http.MethodGet, "/api/v1/mcp/servers/:server_id/tools", s.listMCPTools)
	s.handle(http.MethodPut, "/api/v1/mcp/servers/:server_id/tools/:tool_name/policy", s.setMCPToolPolicy)
}

// mcpServerJSON is a server on the wire: its header values are never
// shown, only their names.
type mcpServerJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	URL         string    `json:"url"`
	HeaderNames []string  `json:"header_names"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
	ToolCount   int       `json:"tool_count"`
	LastError   string    `json:"last_error,omitempty"`
}

func mcpServerOut(m ports.MCPServer) mcpServerJSON {
	names := m.HeaderNames
	if names == nil {
		names = []string{}
	}
	return mcpServerJSON{ID: m.ID, Name: m.Name, URL: m.URL, HeaderNames: names, CreatedAt: m.CreatedAt.UTC(),
		CreatedBy: m.CreatedBy, ToolCount: m.ToolCount, LastError: m.LastError}
}

type createMCPServerRequest struct {
	Name    *string           `json:"name"`
	URL     *string           `json:"url"`
	Headers map[string]string `json:"headers"`
}

func (s *Server) createMCPServer(w http.ResponseWriter, r *http.Request) error {
	var req createMCPServerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var absent []string
	if req.Name == nil {
		absent = append(absent, "name")
	}
	if req.URL == nil {
		absent = append(absent, "url")
	}
	if len(absent) > 0 {
		return missing(absent...)
	}
	m, err := s.d.MCP.CreateServer(r.Context(), mcptools.ServerInput{Name: *req.Name, URL: *req.URL, Headers: req.Headers})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, mcpServerOut(m))
}

func (s *Server) listMCPServers(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	servers, next, err := s.d.MCP.ListServers(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(servers, mcpServerOut), next))
}

func (s *Server) deleteMCPServer(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.MCP.DeleteServer(r.Context(), pathParam(r, "server_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type mcpTestJSON struct {
	OK        bool   `json:"ok"`
	ToolCount int    `json:"tool_count"`
	LatencyMS int64  `json:"latency_ms"`
	Error     string `json:"error,omitempty"`
}

func (s *Server) testMCPServer(w http.ResponseWriter, r *http.Request) error {
	res, err := s.d.MCP.TestServer(r.Context(), pathParam(r, "server_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, mcpTestJSON{OK: res.OK, ToolCount: res.ToolCount, LatencyMS: res.Latency.Milliseconds(), Error: res.Error})
}

type mcpToolJSON struct {
	Name          string          `json:"name"`
	RemoteName    string          `json:"remote_name"`
	Description   string          `json:"description"`
	ReadOnly      bool            `json:"read_only"`
	Destructive   bool            `json:"destructive"`
	Policy        ports.MCPPolicy `json:"policy"`
	NeedsApproval bool            `json:"needs_approval"`
}

func mcpToolOut(t mcptools.ToolInfo) mcpToolJSON {
	return mcpToolJSON{Name: t.Name, RemoteName: t.RemoteName, Description: t.Description, ReadOnly: t.ReadOnly,
		Destructive: t.Destructive, Policy: t.Policy, NeedsApproval: t.NeedsApproval}
}

type mcpToolsJSON struct {
	Items      []mcpToolJSON `json:"items"`
	NextCursor *string       `json:"next_cursor"`
	Error      string        `json:"error,omitempty"`
}

func (s *Server) listMCPTools(w http.ResponseWriter, r *http.Request) error {
	tools, problem, err := s.d.MCP.Tools(r.Context(), pathParam(r, "server_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, mcpToolsJSON{Items: mapSlice(tools, mcpToolOut), Error: problem})
}

type mcpPolicyRequest struct {
	Policy *string `json:"policy"`
}

func (s *Server) setMCPToolPolicy(w http.ResponseWriter, r *http.Request) error {
	var req mcpPolicyRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Policy == nil {
		return missing("policy")
	}
	t, err := s.d.MCP.SetToolPolicy(r.Context(), pathParam(r, "server_id"), pathParam(r, "tool_name"), ports.MCPPolicy(*req.Policy))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, mcpToolOut(t))
}
