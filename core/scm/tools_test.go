package scm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const chatID = "00000000-0000-7000-8000-00000000c0de"

// toolEnv registers the SCM tools in a registry and an assistant service
// that carries out calls the way the chat loop does.
func toolEnv(t *testing.T) (*env, *tool.Registry, *assistant.Service) {
	t.Helper()
	e := newEnv(t, scm.Config{})
	reg := tool.NewRegistry()
	if err := reg.Register(e.svc.Tools()...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	ctrl := gomock.NewController(t)
	sessions := mocks.NewMockChatSessionStore(ctrl)
	sessions.EXPECT().GetSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.ChatSession, error) {
			return ports.ChatSession{ID: id, OrgID: o.OrgID, UserID: o.UserID}, nil
		})
	asst := assistant.New(assistant.Config{}, assistant.Deps{Sessions: sessions, Clock: e.clock, IDs: &fixture.IDs{}, Registry: reg})
	return e, reg, asst
}

func TestToolsRegister(t *testing.T) {
	t.Parallel()
	_, reg, _ := toolEnv(t)
	want := map[string]bool{"list_repos": false, "list_commits": true, "list_pulls": true, "search_commits": false, "get_repo_activity": true}
	defs := reg.Definitions()
	if len(defs) != len(want) {
		t.Fatalf("%d definitions, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		tl, ok := reg.Lookup(d.Name)
		needsRepo, known := want[d.Name]
		if !ok || !known || tl.Effect != tool.EffectRead || d.Description == "" {
			t.Errorf("tool %s: %+v", d.Name, tl)
		}
		var schema struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(tl.Schema, &schema); err != nil {
			t.Fatal(err)
		}
		// The model is shown the strict form of the schema.
		if p := tool.StrictProblem(d.Parameters); p != "" || !d.Strict {
			t.Errorf("tool %s is not strict (%v): %s", d.Name, d.Strict, p)
		}
		if got := strings.Join(schema.Required, ","); needsRepo && got != "repo_id" {
			t.Errorf("tool %s requires %q", d.Name, got)
		}
	}
}

func TestToolArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	_, _, asst := toolEnv(t)
	for _, tt := range []struct{ tl, args string }{
		{"list_repos", `{"limit":101}`},
		{"list_commits", `{}`},
		{"list_commits", `{"repo_id":"acme/web"}`},
		{"list_pulls", `{"repo_id":"00000000-0000-7000-8000-000000000002","limit":0}`},
		{"search_commits", `{"q":""}`},
		{"search_commits", fmt.Sprintf(`{"q":%q}`, strings.Repeat("x", 257))},
		{"get_repo_activity", `{"repo_id":"00000000-0000-7000-8000-000000000002","since":"yesterday"}`},
	} {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "schema") {
			t.Errorf("%s %s: %+v, want refused for its schema", tt.tl, tt.args, ex.Outcome)
		}
	}
}

func TestToolsRun(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	ids := e.seed(alice, "gho_alice", webRepo, apiRepo)
	web := ids[0]
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	e.prov.EXPECT().ListCommits(gomock.Any(), "gho_alice", "acme", "web", ports.Page{Limit: 5}).Return([]ports.SCMCommit{{
		SHA: "abc123", Message: "Fix login\n\n" + strings.Repeat("x", 3000) + "\n", AuthorName: "Alice", AuthorLogin: "alice",
		HTMLURL: "https://github.com/acme/web/commit/abc123", CommittedAt: at}}, "c2", nil)
	e.prov.EXPECT().ListPulls(gomock.Any(), "gho_alice", "acme", "web", ports.Page{Limit: ports.DefaultPageLimit}).Return([]ports.SCMPull{{
		Number: 12, Title: "Add login", State: "open", AuthorLogin: "alice", HeadRef: "feature-login", BaseRef: "main", Draft: true,
		CreatedAt: at, UpdatedAt: at}}, "", nil)
	e.prov.EXPECT().SearchCommits(gomock.Any(), "gho_alice", "login repo:acme/web", ports.Page{Limit: ports.DefaultPageLimit, Cursor: "s1"}).
		Return([]ports.SCMCommit{{SHA: "abc123", Repo: "acme/web", Message: "Fix login"}}, "", nil)
	e.prov.EXPECT().ListActivity(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).
		Return([]ports.SCMActivity{{ID: "event:1", RepoID: 101, Kind: "push", Actor: "alice", Ref: "main", Summary: "alice pushed 1 commit to main", At: at, Source: "api"}}, "", nil)

	tests := []struct {
		tl, args string
		contains []string
		lacks    []string
	}{
		{"list_repos", ``, []string{`"id":"` + web + `"`, `"full_name":"acme/web"`, `"full_name":"acme/api"`, `"private":true`,
			`"default_branch":"main"`, `"description":"The website"`, `"next_cursor":""`}, []string{"sealed", "gho_alice", "connection"}},
		{"list_commits", fmt.Sprintf(`{"repo_id":%q,"limit":5}`, web), []string{`"sha":"abc123"`, `"message":"Fix login\n\nxxx`, `…"`,
			`"author":"Alice"`, `"author_login":"alice"`, `"committed_at":"2026-01-02T03:00:00Z"`, `"next_cursor":"c2"`}, []string{"gho_alice"}},
		{"list_pulls", fmt.Sprintf(`{"repo_id":%q}`, web), []string{`"number":12`, `"title":"Add login"`, `"head":"feature-login"`,
			`"base":"main"`, `"draft":true`, `"merged":false`}, []string{"merged_at"}},
		{"search_commits", `{"q":"login repo:acme/web","cursor":"s1"}`, []string{`"repo":"acme/web"`, `"sha":"abc123"`}, nil},
		{"get_repo_activity", fmt.Sprintf(`{"repo_id":%q}`, web), []string{`"kind":"push"`, `"summary":"alice pushed 1 commit to main"`,
			`"actor":"alice"`, `"ref":"main"`, `"source":"api"`, `"at":"2026-01-02T03:00:00Z"`}, nil},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil || ex.Outcome == nil || !ex.Outcome.OK {
			t.Errorf("%s: %+v, %v", tt.tl, ex.Outcome, err)
			continue
		}
		out := string(ex.Outcome.Result)
		for _, s := range tt.contains {
			if !strings.Contains(out, s) {
				t.Errorf("%s: %.400s lacks %s", tt.tl, out, s)
			}
		}
		for _, s := range tt.lacks {
			if strings.Contains(out, s) {
				t.Errorf("%s: %.400s contains %s", tt.tl, out, s)
			}
		}
	}

	// Errors reach the model as their messages: another's repository, and
	// no connection.
	ex, _ := asst.ExecuteTool(as(bob), chatID, ports.ToolCall{Name: "list_commits", Arguments: fmt.Sprintf(`{"repo_id":%q}`, web)})
	if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "not found") {
		t.Errorf("another's repository: %+v", ex.Outcome)
	}
	ex, _ = asst.ExecuteTool(as(bob), chatID, ports.ToolCall{Name: "search_commits", Arguments: `{"q":"x"}`})
	if ex.Outcome == nil || ex.Outcome.OK || ex.Outcome.Error != "connect GitHub first: GET /scm-oauth/authorize" {
		t.Errorf("not connected: %+v", ex.Outcome)
	}
}
