package scm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

const brokenMessage = "the GitHub connection is broken: the token was revoked or expired; reconnect at /scm-oauth/authorize"

func TestListRepos(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.seed(alice, "gho_alice", webRepo, apiRepo)
	e.seed(bob, "gho_bob", ports.SCMRepo{ProviderID: 9, FullName: "bob/dotfiles"})

	list, next, err := e.svc.ListRepos(as(alice), ports.Page{Limit: 1})
	if err != nil || len(list) != 1 || list[0].FullName != "acme/api" || next == "" {
		t.Fatalf("first page %+v, %q, %v", list, next, err)
	}
	list, next, err = e.svc.ListRepos(as(alice), ports.Page{Limit: 1, Cursor: next})
	if err != nil || len(list) != 1 || list[0].FullName != "acme/web" || next != "" {
		t.Fatalf("second page %+v, %q, %v", list, next, err)
	}
	if list, _, _ := e.svc.ListRepos(as(bob), ports.Page{}); len(list) != 1 || list[0].FullName != "bob/dotfiles" {
		t.Errorf("bob sees %+v", list)
	}
	if list, _, err := e.svc.ListRepos(as(alice), ports.Page{Limit: 200}); err != nil || len(list) != 2 {
		t.Errorf("limit 200: %+v, %v", list, err)
	}
	_, _, err = e.svc.ListRepos(as(alice), ports.Page{Limit: 201})
	wantErr(t, "limit", err, ports.KindInvalid, "")
	_, _, err = e.svc.ListRepos(context.Background(), ports.Page{})
	wantErr(t, "no principal", err, ports.KindUnauthenticated, "")
}

func TestReadsCallTheProviderWithTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	at := fixture.Epoch
	e.prov.EXPECT().ListCommits(gomock.Any(), "gho_alice", "acme", "web", ports.Page{Limit: ports.DefaultPageLimit}).
		Return([]ports.SCMCommit{{SHA: "abc", Message: "Fix login", CommittedAt: at}}, "opaque-2", nil)
	e.prov.EXPECT().ListCommits(gomock.Any(), "gho_alice", "acme", "web", ports.Page{Limit: 5, Cursor: "opaque-2"}).Return(nil, "", nil)
	e.prov.EXPECT().ListPulls(gomock.Any(), "gho_alice", "acme", "web", ports.Page{Limit: 100}).
		Return([]ports.SCMPull{{Number: 12, Title: "Add login"}}, "", nil)
	e.prov.EXPECT().SearchCommits(gomock.Any(), "gho_alice", "fix login repo:acme/web", ports.Page{Limit: ports.DefaultPageLimit}).
		Return([]ports.SCMCommit{{SHA: "abc", Repo: "acme/web"}}, "s2", nil)

	commits, next, err := e.svc.ListCommits(as(alice), ids[0], ports.Page{})
	if err != nil || len(commits) != 1 || commits[0].SHA != "abc" || next != "opaque-2" {
		t.Errorf("ListCommits = %+v, %q, %v", commits, next, err)
	}
	if _, next, err = e.svc.ListCommits(as(alice), ids[0], ports.Page{Limit: 5, Cursor: next}); err != nil || next != "" {
		t.Errorf("ListCommits page 2: %q, %v", next, err)
	}
	pulls, _, err := e.svc.ListPulls(as(alice), ids[0], ports.Page{Limit: 100})
	if err != nil || len(pulls) != 1 || pulls[0].Number != 12 {
		t.Errorf("ListPulls = %+v, %v", pulls, err)
	}
	found, next, err := e.svc.SearchCommits(as(alice), "  fix login repo:acme/web ", ports.Page{})
	if err != nil || len(found) != 1 || next != "s2" {
		t.Errorf("SearchCommits = %+v, %q, %v", found, next, err)
	}
	conn := e.conn(alice)
	if len(e.opens) != 4 {
		t.Errorf("%d opens, want one per provider call", len(e.opens))
	}
	for _, o := range e.opens {
		if o.aad != conn.ID || o.plaintext != conn.SealedToken {
			t.Errorf("opened %+v, want the connection's sealed token with its id", o)
		}
	}
}

func TestReadsAreTheOwners(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.seed(alice, "gho_alice", webRepo)
	bobs := e.seed(bob, "gho_bob", apiRepo)
	// No provider call is expected: each fails before.
	for _, id := range []string{bobs[0], "00000000-0000-7000-8000-0000000000ff", "acme/web", ""} {
		_, _, err := e.svc.ListCommits(as(alice), id, ports.Page{})
		wantErr(t, "commits of "+id, err, ports.KindNotFound, "")
		_, _, err = e.svc.ListPulls(as(alice), id, ports.Page{})
		wantErr(t, "pulls of "+id, err, ports.KindNotFound, "")
		_, _, err = e.svc.Activity(as(alice), id, ports.Page{})
		wantErr(t, "activity of "+id, err, ports.KindNotFound, "")
	}
	_, _, err := e.svc.ListCommits(context.Background(), bobs[0], ports.Page{})
	wantErr(t, "no principal", err, ports.KindUnauthenticated, "")
}

func TestReadsNeedAConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	e.scm.disconnected = true // the repositories stay, as after a disconnect
	calls := map[string]func() error{
		"ListCommits": func() error { _, _, err := e.svc.ListCommits(as(alice), ids[0], ports.Page{}); return err },
		"ListPulls":   func() error { _, _, err := e.svc.ListPulls(as(alice), ids[0], ports.Page{}); return err },
		"Activity":    func() error { _, _, err := e.svc.Activity(as(alice), ids[0], ports.Page{}); return err },
		"SearchCommits": func() error {
			_, _, err := e.svc.SearchCommits(as(alice), "fix", ports.Page{})
			return err
		},
	}
	for name, call := range calls {
		pe := wantErr(t, name, call(), ports.KindPreconditionFailed, scm.CodeNotConnected)
		if pe.Message != "connect GitHub first: GET /scm-oauth/authorize" {
			t.Errorf("%s: message %q", name, pe.Message)
		}
	}
}

func TestRevokedTokenBreaksTheConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	e.prov.EXPECT().ListCommits(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).
		Return(nil, "", &ports.Error{Kind: ports.KindUpstream, Code: "token_revoked", Message: "GitHub: Bad credentials"})

	_, _, err := e.svc.ListCommits(as(alice), ids[0], ports.Page{})
	if pe := wantErr(t, "revoked", err, ports.KindUpstream, scm.CodeConnectionBroken); pe.Message != brokenMessage {
		t.Errorf("message %q", pe.Message)
	}
	conn := e.conn(alice)
	if conn.Status != ports.SCMBroken || conn.Error == "" || len(e.scm.broken) != 1 || e.scm.broken[0] != conn.ID {
		t.Errorf("connection %+v, marked %v", conn, e.scm.broken)
	}

	// The provider is not asked again (the mock expects no more calls).
	for name, call := range map[string]func() error{
		"ListCommits":   func() error { _, _, err := e.svc.ListCommits(as(alice), ids[0], ports.Page{}); return err },
		"ListPulls":     func() error { _, _, err := e.svc.ListPulls(as(alice), ids[0], ports.Page{}); return err },
		"Activity":      func() error { _, _, err := e.svc.Activity(as(alice), ids[0], ports.Page{}); return err },
		"SearchCommits": func() error { _, _, err := e.svc.SearchCommits(as(alice), "x", ports.Page{}); return err },
	} {
		if pe := wantErr(t, name, call(), ports.KindUpstream, scm.CodeConnectionBroken); pe.Message != brokenMessage {
			t.Errorf("%s: message %q", name, pe.Message)
		}
	}
	if len(e.scm.broken) != 1 {
		t.Errorf("marked broken %d times", len(e.scm.broken))
	}
}

func TestProviderErrorsPassThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	e.prov.EXPECT().ListPulls(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).
		Return(nil, "", &ports.Error{Kind: ports.KindRateLimited, Message: "GitHub rate limit", RetryAfter: 42 * time.Second})
	e.prov.EXPECT().ListCommits(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).
		Return(nil, "", &ports.Error{Kind: ports.KindUpstream, Message: "GitHub said gho_alice is odd"})

	_, _, err := e.svc.ListPulls(as(alice), ids[0], ports.Page{})
	if pe := wantErr(t, "rate limited", err, ports.KindRateLimited, ""); pe.RetryAfter != 42*time.Second {
		t.Errorf("retry after %v", pe.RetryAfter)
	}
	_, _, err = e.svc.ListCommits(as(alice), ids[0], ports.Page{})
	if wantErr(t, "upstream", err, ports.KindUpstream, ""); strings.Contains(err.Error(), "gho_alice") {
		t.Errorf("the token leaks: %v", err)
	}
	if c := e.conn(alice); c.Status != ports.SCMActive {
		t.Errorf("connection %s after errors that are not about the token", c.Status)
	}

	// A token that cannot be opened is an internal error, not a provider call.
	c := e.conn(alice)
	c.SealedToken = seal("gho_alice", "another-id")
	if _, err := e.store.SaveConnection(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.ListPulls(as(alice), ids[0], ports.Page{})
	wantErr(t, "unopenable", err, ports.KindInternal, "")
}

func TestSearchCommitsQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.seed(alice, "gho_alice")
	longest := strings.Repeat("é", 256)
	e.prov.EXPECT().SearchCommits(gomock.Any(), "gho_alice", longest, gomock.Any()).Return(nil, "", nil)
	tests := []struct {
		q    string
		kind ports.Kind
	}{
		{"", ports.KindMalformed},
		{" \t ", ports.KindMalformed},
		{longest + "x", ports.KindInvalid},
		{longest, ""},
	}
	for _, tt := range tests {
		_, _, err := e.svc.SearchCommits(as(alice), tt.q, ports.Page{})
		if tt.kind == "" {
			if err != nil {
				t.Errorf("q of %d bytes: %v", len(tt.q), err)
			}
			continue
		}
		wantErr(t, "q "+tt.q[:min(len(tt.q), 10)], err, tt.kind, "")
		if f := fieldsOf(err); len(f) != 1 || f[0] != "q" {
			t.Errorf("fields %v", f)
		}
	}
}
