package spec_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// repoHub is a provider serving one repository's files, acme/shop.
type repoHub struct {
	ports.SCMProvider
	token string
	files map[string]string
}

func (h *repoHub) ReadTree(_ context.Context, token, owner, repo, _ string) ([]ports.SCMTreeEntry, bool, error) {
	if token != h.token || owner != "acme" || repo != "shop" {
		return nil, false, ports.NotFound("repository", owner+"/"+repo)
	}
	var out []ports.SCMTreeEntry
	for p, c := range h.files {
		out = append(out, ports.SCMTreeEntry{Path: p, Size: int64(len(c))})
	}
	slices.SortFunc(out, func(a, b ports.SCMTreeEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, false, nil
}

func (h *repoHub) ReadFile(_ context.Context, token, owner, repo, _, path string, maxBytes int) (ports.SCMFile, error) {
	c, ok := h.files[path]
	if token != h.token || owner != "acme" || repo != "shop" || !ok {
		return ports.SCMFile{}, ports.NotFound("file", path)
	}
	return ports.SCMFile{Path: path, Content: c[:min(len(c), maxBytes)], Size: int64(len(c))}, nil
}

// linkRepository gives alice a GitHub connection seeing acme/shop, holding
// files, and links the session to it.
func (e *env) linkRepository(sid string, files map[string]string) {
	t := e.t
	t.Helper()
	hub := &repoHub{token: "gho_alice", files: files}
	ctx := t.Context()
	conn, err := e.store.SaveConnection(ctx, ports.SCMConnection{ID: e.ids.NewID(), OrgID: alice.OrgID, UserID: alice.UserID, Provider: "github",
		Login: "alice", Status: ports.SCMActive, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	conn.SealedToken, _ = plainCipher{}.Seal([]byte(hub.token), []byte(conn.ID))
	if conn, err = e.store.SaveConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	repos, err := e.store.SaveRepositories(ctx, conn.ID, []ports.Repository{{ID: e.ids.NewID(), OrgID: alice.OrgID, UserID: alice.UserID,
		ConnectionID: conn.ID, SCMRepo: ports.SCMRepo{ProviderID: 7, FullName: "acme/shop", Owner: "acme", Name: "shop"}}}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.SCMProvider = "github"
	e.rewire(func(d *spec.Deps) { d.Repos, d.SCM, d.Cipher = e.store, hub, plainCipher{} })
	if _, err := e.svc.SetRepository(as(alice), sid, repos[0].ID); err != nil {
		t.Fatal(err)
	}
}

// TestSingleCallPRPsAreGrounded: with BatchConcurrency 0 the one PRP
// request shows the linked repository (its tree, files like the stories'
// and its commands) the findings check the PRPs against.
func TestSingleCallPRPsAreGrounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics, ports.StageStories)
	e.linkRepository(sid, map[string]string{
		"Makefile":                   "test:\n\tgo test ./...\n\nlint:\n\tgo vet ./...\n",
		"go.mod":                     "module example.com/shop\n",
		"internal/ledger/export.go":  "package ledger\n\n// ExportCSV writes approved expenses.\nfunc ExportCSV() {}\n",
		"internal/approval/queue.go": "package approval\n",
	})
	var mu sync.Mutex
	var users []string
	e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
			mu.Lock()
			users = append(users, req.Messages[1].Content)
			mu.Unlock()
			return ports.ChatResult{Content: sample(t, ports.StagePRPs), FinishReason: ports.FinishStop, Model: "model-x"}, nil
		})
	if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
		t.Fatal(err)
	}
	if s := e.session(sid); s.Status != ports.SpecReady || s.CurrentStage != ports.StagePRPs {
		t.Fatalf("%s %+v", s.Status, s.Error)
	}
	if len(users) == 0 {
		t.Fatal("no request")
	}
	user := users[0]
	repo := strings.Index(user, "# Repository acme/shop")
	if repo < 0 || repo < strings.Index(user, `<artifact stage="stories"`) || repo > strings.Index(user, "Write the prps stage now.") {
		t.Fatalf("the request has no repository section after the earlier stages:\n%s", user)
	}
	for _, want := range []string{`<tree files="4" shown="4">`, "internal/approval/queue.go", `<file path="internal/ledger/export.go">`, "func ExportCSV()", "<commands", "make test", "make lint"} {
		if !strings.Contains(user[repo:], want) {
			t.Errorf("the repository section lacks %q:\n%s", want, user[repo:])
		}
	}
	// The findings are checked against the same repository.
	arts := e.artifacts(sid)
	if checks := strings.Join(arts[len(arts)-1].Checks, "\n"); !strings.Contains(checks, "which acme/shop does not have") {
		t.Errorf("checks:\n%s", checks)
	}
}
