package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// mcpStores are the MCP server store under test and the identity stores
// that seed the orgs owning its servers.
type mcpStores struct {
	Servers  ports.MCPServerStore
	Identity identityStores
}

// TestMCPServers runs the contract of ports.MCPServerStore. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the port leaves a case open, the suite expects times to read back in
// UTC, at least to the millisecond.
func TestMCPServers(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.mcp, needMCP), []suiteCase[mcpStores]{
		{"CreateGetList", testMCPCreateGetList},
		{"NameConflict", testMCPNameConflict},
		{"MissingOrg", testMCPMissingOrg},
		{"OrgIsolation", testMCPOrgIsolation},
		{"Delete", testMCPDelete},
		{"Status", testMCPStatus},
		{"Policies", testMCPPolicies},
		{"RaceCreate", testMCPRaceCreate},
	})
}

func newMCPOrg(t *testing.T, s mcpStores) (ports.Org, ports.User) {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	u := newUser(org.ID)
	u.Role = ports.RoleAdmin
	return org, mustCreateUser(t, s.Identity, u)
}

func newMCPServer(orgID, by, name string) ports.MCPServer {
	return ports.MCPServer{ID: newID(), OrgID: orgID, Name: name, URL: "https://mcp.example.com/" + name,
		HeaderNames: []string{}, CreatedBy: by, CreatedAt: base}
}

func mustCreateMCP(t *testing.T, s mcpStores, m ports.MCPServer) ports.MCPServer {
	t.Helper()
	if err := s.Servers.CreateMCPServer(t.Context(), m); err != nil {
		t.Fatalf("CreateMCPServer(%s): %v", m.Name, err)
	}
	return m
}

func normMCP(ms_ []ports.MCPServer) []ports.MCPServer {
	out := make([]ports.MCPServer, len(ms_))
	for i, m := range ms_ {
		m.CreatedAt = ms(m.CreatedAt)
		if m.HeaderNames == nil {
			m.HeaderNames = []string{}
		}
		out[i] = m
	}
	return out
}

func testMCPCreateGetList(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	b := newMCPServer(org.ID, admin.ID, "linear")
	b.HeaderNames, b.SealedHeaders = []string{"Authorization", "X-Team"}, "sealed:v1:abc"
	a := newMCPServer(org.ID, admin.ID, "github")
	mustCreateMCP(t, s, b)
	mustCreateMCP(t, s, a)
	got, err := s.Servers.GetMCPServer(t.Context(), org.ID, b.ID)
	if err != nil {
		t.Fatalf("GetMCPServer: %v", err)
	}
	checkUTC(t, "created_at", &got.CreatedAt)
	checkEqual(t, "the server", normMCP([]ports.MCPServer{got}), normMCP([]ports.MCPServer{b}))
	list, err := s.Servers.ListMCPServers(t.Context(), org.ID)
	if err != nil {
		t.Fatalf("ListMCPServers: %v", err)
	}
	checkEqual(t, "the servers by name", normMCP(list), normMCP([]ports.MCPServer{a, b}))
	if _, err := s.Servers.GetMCPServer(t.Context(), org.ID, newID()); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetMCPServer of an unknown id: %v, want not_found", err)
	}
}

func testMCPNameConflict(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "linear"))
	if err := s.Servers.CreateMCPServer(t.Context(), newMCPServer(org.ID, admin.ID, "linear")); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("a second server named linear: %v, want conflict", err)
	}
	other, otherAdmin := newMCPOrg(t, s)
	mustCreateMCP(t, s, newMCPServer(other.ID, otherAdmin.ID, "linear")) // another org may
}

func testMCPMissingOrg(t *testing.T, s mcpStores) {
	if err := s.Servers.CreateMCPServer(t.Context(), newMCPServer(newID(), newID(), "x")); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("CreateMCPServer for a missing org: %v, want not_found", err)
	}
}

func testMCPOrgIsolation(t *testing.T, s mcpStores) {
	orgA, adminA := newMCPOrg(t, s)
	orgB, _ := newMCPOrg(t, s)
	a := mustCreateMCP(t, s, newMCPServer(orgA.ID, adminA.ID, "linear"))
	if _, err := s.Servers.GetMCPServer(t.Context(), orgB.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's server: %v, want not_found", err)
	}
	if err := s.Servers.DeleteMCPServer(t.Context(), orgB.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("deleting another org's server: %v, want not_found", err)
	}
	err := s.Servers.SetMCPToolPolicy(t.Context(), ports.MCPToolPolicy{OrgID: orgB.ID, ServerID: a.ID, Tool: "t",
		Policy: ports.MCPPolicyDisabled, UpdatedBy: adminA.ID, UpdatedAt: base})
	if !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a policy of another org's server: %v, want not_found", err)
	}
	if list, err := s.Servers.ListMCPServers(t.Context(), orgB.ID); err != nil || len(list) != 0 {
		t.Errorf("org B's servers: %+v, %v; want none", list, err)
	}
	if pols, err := s.Servers.ListMCPToolPolicies(t.Context(), orgB.ID); err != nil || len(pols) != 0 {
		t.Errorf("org B's policies: %+v, %v; want none", pols, err)
	}
}

func testMCPDelete(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	a := mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "linear"))
	if err := s.Servers.SetMCPToolPolicy(t.Context(), ports.MCPToolPolicy{OrgID: org.ID, ServerID: a.ID, Tool: "create_issue",
		Policy: ports.MCPPolicyDisabled, UpdatedBy: admin.ID, UpdatedAt: base}); err != nil {
		t.Fatal(err)
	}
	if err := s.Servers.DeleteMCPServer(t.Context(), org.ID, a.ID); err != nil {
		t.Fatalf("DeleteMCPServer: %v", err)
	}
	if err := s.Servers.DeleteMCPServer(t.Context(), org.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("deleting again: %v, want not_found", err)
	}
	if pols, err := s.Servers.ListMCPToolPolicies(t.Context(), org.ID); err != nil || len(pols) != 0 {
		t.Errorf("policies after the delete: %+v, %v; want none", pols, err)
	}
	// The name is free again.
	mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "linear"))
}

func testMCPStatus(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	a := mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "linear"))
	if err := s.Servers.RecordMCPServerStatus(t.Context(), org.ID, a.ID, 7, "timed out"); err != nil {
		t.Fatalf("RecordMCPServerStatus: %v", err)
	}
	got, err := s.Servers.GetMCPServer(t.Context(), org.ID, a.ID)
	if err != nil || got.ToolCount != 7 || got.LastError != "timed out" {
		t.Fatalf("after recording: %+v, %v", got, err)
	}
	if err := s.Servers.RecordMCPServerStatus(t.Context(), org.ID, newID(), 1, ""); err != nil {
		t.Errorf("recording the status of a deleted server: %v, want nil", err)
	}
}

func testMCPPolicies(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	b := mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "b"))
	a := mustCreateMCP(t, s, newMCPServer(org.ID, admin.ID, "a"))
	set := func(srv ports.MCPServer, tool string, p ports.MCPPolicy, at time.Time) ports.MCPToolPolicy {
		t.Helper()
		pol := ports.MCPToolPolicy{OrgID: org.ID, ServerID: srv.ID, Tool: tool, Policy: p, UpdatedBy: admin.ID, UpdatedAt: at}
		if err := s.Servers.SetMCPToolPolicy(t.Context(), pol); err != nil {
			t.Fatalf("SetMCPToolPolicy(%s): %v", tool, err)
		}
		return pol
	}
	set(a, "z", ports.MCPPolicyAlwaysConfirm, base)
	p1 := set(a, "z", ports.MCPPolicyDisabled, base.Add(time.Hour)) // replaces
	p2 := set(a, "m", ports.MCPPolicyDefault, base)
	p3 := set(b, "a", ports.MCPPolicyAlwaysConfirm, base)
	got, err := s.Servers.ListMCPToolPolicies(t.Context(), org.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		checkUTC(t, "updated_at", &got[i].UpdatedAt)
		got[i].UpdatedAt = ms(got[i].UpdatedAt)
	}
	want := []ports.MCPToolPolicy{p2, p1, p3}
	if a.ID > b.ID {
		want = []ports.MCPToolPolicy{p3, p2, p1}
	}
	for i := range want {
		want[i].UpdatedAt = ms(want[i].UpdatedAt)
	}
	checkEqual(t, "policies by server then tool", got, want)
	err = s.Servers.SetMCPToolPolicy(t.Context(), ports.MCPToolPolicy{OrgID: org.ID, ServerID: newID(), Tool: "x",
		Policy: ports.MCPPolicyDisabled, UpdatedBy: admin.ID, UpdatedAt: base})
	if !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a policy of a missing server: %v, want not_found", err)
	}
}

func testMCPRaceCreate(t *testing.T, s mcpStores) {
	org, admin := newMCPOrg(t, s)
	const n = 6
	errs := race(n, func(i int) error {
		return s.Servers.CreateMCPServer(t.Context(), newMCPServer(org.ID, admin.ID, "same"))
	})
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ports.ErrConflict):
			t.Errorf("create %d: %v, want nil or conflict", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d creates of one name succeeded, want 1", ok)
	}
	list, err := s.Servers.ListMCPServers(t.Context(), org.ID)
	if err != nil || len(list) != 1 {
		t.Errorf("after racing creates: %d servers (%v), want 1", len(list), err)
	}
}
