// Package fakemcp is an MCP server for tests, built with the official MCP
// Go SDK (mcp.NewServer behind its Streamable HTTP handler on an
// httptest.Server), so the real client adapter is exercised over the real
// protocol. Its tools:
//
//   - lookup (readOnlyHint): answers "found: <query>";
//   - create_ticket (no annotations, so a write): answers "created <title>";
//   - hang (readOnlyHint): answers only when the call is cancelled or the
//     server closes;
//   - big (readOnlyHint): answers BigSize bytes of text;
//   - vanish (readOnlyHint): the server breaks every connection mid-call.
//
// AddTool adds a tool (the SDK notifies tools/list_changed to every
// session); Stop makes the server disappear; RequireHeader refuses requests
// without a header.
package fakemcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BigSize is the size of the big tool's answer: 10 MB.
const BigSize = 10 << 20

// Server is the fake MCP server.
type Server struct {
	srv    *httptest.Server
	mcp    *mcp.Server
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	header  [2]string // a header every request must carry, when set
	headers []http.Header
	calls   map[string]int
	Started chan string // the name of each call as it starts
}

// LookupIn is lookup's input.
type LookupIn struct {
	Query string `json:"query" jsonschema:"what to look up"`
}

// TicketIn is create_ticket's input.
type TicketIn struct {
	Title string `json:"title" jsonschema:"the ticket's title"`
}

// Empty is the input of the tools without arguments.
type Empty struct{}

// New starts a fake MCP server, stopped when t ends.
func New(t testing.TB) *Server {
	s := &Server{closed: make(chan struct{}), calls: map[string]int{}, Started: make(chan string, 64)}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "fakemcp", Version: "1"}, nil)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "lookup", Description: "Looks a thing up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in LookupIn) (*mcp.CallToolResult, any, error) {
			s.count("lookup")
			return text("found: " + in.Query), nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "create_ticket", Description: "Creates a ticket."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in TicketIn) (*mcp.CallToolResult, any, error) {
			s.count("create_ticket")
			return text("created " + in.Title), nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "hang", Description: "Never answers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			s.count("hang")
			select {
			case <-ctx.Done():
			case <-s.closed:
			}
			return text("too late"), nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "big", Description: "Answers 10 MB.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			s.count("big")
			return text(strings.Repeat("x", BigSize)), nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "vanish", Description: "Breaks off.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			s.count("vanish")
			s.srv.CloseClientConnections()
			select {
			case <-ctx.Done():
			case <-s.closed:
			}
			return text("gone"), nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		want := s.header
		s.mu.Unlock()
		if want[0] != "" && r.Header.Get(want[0]) != want[1] {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Stop)
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (s *Server) count(name string) {
	s.mu.Lock()
	s.calls[name]++
	s.mu.Unlock()
	select {
	case s.Started <- name:
	default:
	}
}

// URL is the server's MCP endpoint.
func (s *Server) URL() string { return s.srv.URL + "/mcp" }

// Calls is how many times the tool named name ran.
func (s *Server) Calls(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// RequireHeader makes every request without the header name: value fail
// with 401.
func (s *Server) RequireHeader(name, value string) {
	s.mu.Lock()
	s.header = [2]string{name, value}
	s.mu.Unlock()
}

// Headers are the headers of every request received.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// AddTool adds a read tool answering answer; the SDK tells every session
// that the tool list changed.
func (s *Server) AddTool(name, description, answer string) {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: name, Description: description, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			s.count(name)
			return text(answer), nil, nil
		})
}

// Stop makes the server disappear: hanging calls end, connections close
// and the address refuses new ones.
func (s *Server) Stop() {
	s.once.Do(func() {
		close(s.closed)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}
