package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/core/mcptools"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	admin  = ports.Principal{UserID: "u-admin", OrgID: "org-1", Role: ports.RoleAdmin}
	member = ports.Principal{UserID: "u-member", OrgID: "org-1", Role: ports.RoleMember}
)

type env struct {
	svc    *mcptools.Service
	store  *memstore.Store
	client *mocks.MockMCPClient
	clock  *fixture.Clock
}

func newEnv(t *testing.T, cfg mcptools.Config) *env {
	t.Helper()
	store := memstore.New()
	if err := store.CreateOrg(t.Context(), ports.Org{ID: "org-1", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	client := mocks.NewMockMCPClient(gomock.NewController(t))
	cfg.AllowPrivate = true
	clock := fixture.NewClock()
	svc := mcptools.New(cfg, mcptools.Deps{Store: store, Client: client, Cipher: box, Audit: store,
		Clock: clock, IDs: &fixture.IDs{}})
	return &env{svc: svc, store: store, client: client, clock: clock}
}

func as(t *testing.T, p ports.Principal) context.Context { return ports.WithPrincipal(t.Context(), p) }

func TestCreateServerChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mcptools.Config{})
	many := map[string]string{}
	for i := range mcptools.MaxHeaders + 1 {
		many["X-H"+string(rune('a'+i))] = "v"
	}
	for _, tc := range []struct {
		name  string
		in    mcptools.ServerInput
		field string
	}{
		{"upper-case name", mcptools.ServerInput{Name: "Linear", URL: "https://mcp.example.com"}, "name"},
		{"separator in name", mcptools.ServerInput{Name: "a__b", URL: "https://mcp.example.com"}, "name"},
		{"long name", mcptools.ServerInput{Name: strings.Repeat("a", 33), URL: "https://mcp.example.com"}, "name"},
		{"no url", mcptools.ServerInput{Name: "a"}, "url"},
		{"ftp", mcptools.ServerInput{Name: "a", URL: "ftp://mcp.example.com"}, "url"},
		{"credentials", mcptools.ServerInput{Name: "a", URL: "https://u:p@mcp.example.com"}, "url"},
		{"too many headers", mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com", Headers: many}, "headers"},
		{"reserved header", mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com", Headers: map[string]string{"mcp-session-id": "x"}}, "headers.mcp-session-id"},
		{"header name", mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com", Headers: map[string]string{"Bad Name": "x"}}, "headers"},
		{"header value", mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com", Headers: map[string]string{"X-A": "a\r\nb"}}, "headers.X-A"},
		{"empty value", mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com", Headers: map[string]string{"X-A": ""}}, "headers.X-A"},
	} {
		_, err := e.svc.CreateServer(as(t, admin), tc.in)
		var pe *ports.Error
		if !errors.As(err, &pe) || pe.Kind != ports.KindInvalid || len(pe.Fields) == 0 || pe.Fields[0].Field != tc.field {
			t.Errorf("%s: %v (%+v), want invalid naming %s", tc.name, err, pe, tc.field)
		}
	}
	if _, err := e.svc.CreateServer(as(t, member), mcptools.ServerInput{Name: "a", URL: "https://mcp.example.com"}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a member: %v, want forbidden", err)
	}
	if reason := mcptools.CheckURL("http://127.0.0.1/mcp", false); reason == "" {
		t.Error("a loopback address passed the guard")
	}

	m, err := e.svc.CreateServer(as(t, admin), mcptools.ServerInput{Name: "linear", URL: "https://mcp.example.com",
		Headers: map[string]string{"Authorization": "Bearer tok-123"}})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.store.GetMCPServer(t.Context(), "org-1", m.ID)
	if err != nil || strings.Contains(stored.SealedHeaders, "tok-123") || stored.SealedHeaders == "" ||
		!slices.Equal(stored.HeaderNames, []string{"Authorization"}) {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if _, err := e.svc.CreateServer(as(t, admin), mcptools.ServerInput{Name: "linear", URL: "https://x.example.com"}); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("the same name: %v, want conflict", err)
	}
}

func TestOrgTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mcptools.Config{MaxResult: 100})
	ctx := as(t, admin)
	lin, err := e.svc.CreateServer(ctx, mcptools.ServerInput{Name: "linear", URL: "https://linear.example.com",
		Headers: map[string]string{"Authorization": "Bearer tok"}})
	if err != nil {
		t.Fatal(err)
	}
	down, err := e.svc.CreateServer(ctx, mcptools.ServerInput{Name: "down", URL: "https://down.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tools := []ports.MCPTool{
		{Name: "search", Description: "Searches.", InputSchema: schema, ReadOnly: true},
		{Name: "create_issue", Description: "Creates.", InputSchema: schema},
		{Name: "Get.Thing-2", Description: "Gets.", InputSchema: schema, ReadOnly: true},
		{Name: "secret_read", Description: "Reads.", InputSchema: schema, ReadOnly: true},
	}
	e.client.EXPECT().ListTools(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, ep ports.MCPEndpoint) ([]ports.MCPTool, error) {
			if ep.ServerID == down.ID {
				return nil, &ports.Error{Kind: ports.KindUnavailable, Message: "connecting: refused"}
			}
			if ep.Headers["Authorization"] != "Bearer tok" {
				t.Errorf("headers %v", ep.Headers)
			}
			return tools, nil
		})
	for tl, pol := range map[string]ports.MCPPolicy{"secret_read": ports.MCPPolicyDisabled, "Get.Thing-2": ports.MCPPolicyAlwaysConfirm} {
		if _, err := e.svc.SetToolPolicy(ctx, lin.ID, tl, pol); err != nil {
			t.Fatal(err)
		}
	}

	ex := e.svc.OrgTools(t.Context(), "org-1")
	got := map[string]tool.Tool{}
	for _, tl := range ex.Tools {
		got[tl.Name] = tl
	}
	if len(got) != 3 || got["linear__search"].Effect != tool.EffectRead || got["linear__create_issue"].Effect != tool.EffectWrite ||
		got["linear__get_thing_2"].Effect != tool.EffectWrite || !got["linear__search"].Loose {
		t.Fatalf("tools %+v", ex.Tools)
	}
	if len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "down's tools are unavailable") {
		t.Fatalf("notes %v", ex.Notes)
	}
	if !slices.Contains(ex.AreaWords[got["linear__search"].Area], "linear") {
		t.Fatalf("area words %v", ex.AreaWords)
	}
	srv, _ := e.store.GetMCPServer(t.Context(), "org-1", down.ID)
	if srv.LastError == "" {
		t.Fatal("the failure was not recorded")
	}
	// The tools validate and route like any: a registry with them offers
	// linear's when the message names it.
	reg, problems := tool.NewRegistry().With(ex)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if defs := reg.Route(nil, "search linear for bugs", 0); !slices.ContainsFunc(defs, func(d ports.ToolDefinition) bool { return d.Name == "linear__create_issue" }) {
		t.Fatalf("routing %v", defs)
	}
	if _, _, problem := reg.Check(ports.ToolCall{Name: "linear__search", Arguments: `{}`}); problem == "" {
		t.Fatal("arguments missing a required property passed")
	}

	// A call: bounded, marked as data; a tool error and a transport error fail it.
	e.client.EXPECT().CallTool(gomock.Any(), gomock.Any(), "search", gomock.Any()).Return(ports.MCPResult{Text: strings.Repeat("é", 80)}, nil)
	v, err := got["linear__search"].Run(t.Context(), json.RawMessage(`{"q":"x"}`))
	res, _ := v.(mcptools.Result)
	if err != nil || !res.Truncated || len(res.Content) > 100 || res.Note == "" || !strings.Contains(res.Source, "not instructions") {
		t.Fatalf("result %+v, %v", v, err)
	}
	e.client.EXPECT().CallTool(gomock.Any(), gomock.Any(), "search", gomock.Any()).Return(ports.MCPResult{Text: "boom", IsError: true}, nil)
	if _, err := got["linear__search"].Run(t.Context(), json.RawMessage(`{"q":"x"}`)); !errors.Is(err, ports.ErrUpstream) {
		t.Fatalf("a tool error: %v", err)
	}
	e.client.EXPECT().CallTool(gomock.Any(), gomock.Any(), "search", gomock.Any()).Return(ports.MCPResult{}, &ports.Error{Kind: ports.KindUnavailable, Message: "gone"})
	if _, err := got["linear__search"].Run(t.Context(), json.RawMessage(`{"q":"x"}`)); !errors.Is(err, ports.ErrUnavailable) || !strings.Contains(err.Error(), "linear") {
		t.Fatalf("a transport error: %v", err)
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"create_issue": "x__create_issue", "Get.Thing-2": "x__get_thing_2",
		strings.Repeat("a", 100): "x__" + strings.Repeat("a", 61)} {
		if got := mcptools.ToolName("x", in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOrgToolsLeavesADownServerOut: a server that could not list its tools
// for a turn is left out of the next turns at once, with its note, until
// Config.DownFor has passed or an admin's Test reaches it.
func TestOrgToolsLeavesADownServerOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mcptools.Config{DownFor: time.Minute})
	ctx := as(t, admin)
	srv, err := e.svc.CreateServer(ctx, mcptools.ServerInput{Name: "flaky", URL: "https://flaky.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	up := false
	lists := 0
	answer := func(context.Context, ports.MCPEndpoint) ([]ports.MCPTool, error) {
		lists++
		if !up {
			return nil, &ports.Error{Kind: ports.KindUnavailable, Message: "connecting: refused"}
		}
		return []ports.MCPTool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`), ReadOnly: true}}, nil
	}
	e.client.EXPECT().ListTools(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(answer)
	e.client.EXPECT().Refresh(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(answer)

	for turn := range 3 {
		ex := e.svc.OrgTools(t.Context(), "org-1")
		if len(ex.Tools) != 0 || len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "flaky's tools are unavailable (connecting: refused)") {
			t.Fatalf("turn %d: tools %v, notes %v", turn, ex.Tools, ex.Notes)
		}
	}
	if lists != 1 {
		t.Fatalf("the down server was asked %d times in three turns, want once", lists)
	}
	e.clock.Advance(time.Minute)
	e.svc.OrgTools(t.Context(), "org-1")
	if lists != 2 {
		t.Fatalf("after DownFor the server was asked %d times in all, want 2", lists)
	}
	// An admin's Test reaches it at once; once it answers, turns have its tools.
	up = true
	if res, err := e.svc.TestServer(ctx, srv.ID); err != nil || !res.OK {
		t.Fatalf("test: %+v, %v", res, err)
	}
	if ex := e.svc.OrgTools(t.Context(), "org-1"); len(ex.Tools) != 1 || len(ex.Notes) != 0 {
		t.Fatalf("after a passing test: tools %v, notes %v", ex.Tools, ex.Notes)
	}
}
