package scm_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

func TestConnectionStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.seed(alice, "gho_alice", webRepo, apiRepo)
	e.prov.EXPECT().AuthorizeURL(gomock.Any(), gomock.Any(), callbackURL).Return("https://github.com/login/oauth/authorize", nil).Times(3)

	// Connected: login and how many repositories (the seed names no scopes).
	st, err := e.svc.Connection(as(alice))
	if err != nil || !st.Configured || st.Setup != "" || !st.Connected || st.Status != ports.SCMActive || st.Login != alice.UserID ||
		st.Repositories != 2 || st.Scopes == nil || len(st.Scopes) != 0 {
		t.Fatalf("connected: %+v, %v", st, err)
	}
	// Not connected: bob never connected.
	if st, err := e.svc.Connection(as(bob)); err != nil || !st.Configured || st.Connected || st.Login != "" || st.Repositories != 0 {
		t.Fatalf("not connected: %+v, %v", st, err)
	}
	// Scopes as GitHub named them, and a broken connection says so.
	conn := e.conn(alice)
	conn.Scopes = "repo,read:user"
	if _, err := e.store.SaveConnection(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	if err := e.store.MarkConnectionBroken(t.Context(), conn.ID, "token_revoked", time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err = e.svc.Connection(as(alice))
	if err != nil || st.Status != ports.SCMBroken || st.Error == "" || !slices.Equal(st.Scopes, []string{"repo", "read:user"}) || st.Repositories != 2 {
		t.Fatalf("broken: %+v, %v", st, err)
	}

	// Not configured: the provider says what to set; the connection is still told.
	e.prov.EXPECT().AuthorizeURL(gomock.Any(), gomock.Any(), gomock.Any()).
		Return("", &ports.Error{Kind: ports.KindUnavailable, Code: "not_configured", Message: "GitHub is not configured: set GITHUB_CLIENT_ID"})
	if st, err := e.svc.Connection(as(bob)); err != nil || st.Configured || st.Setup != "GitHub is not configured: set GITHUB_CLIENT_ID" || st.Connected {
		t.Fatalf("not configured: %+v, %v", st, err)
	}
	// Another failure of the provider is an error, not a state.
	boom := errors.New("boom")
	e.prov.EXPECT().AuthorizeURL(gomock.Any(), gomock.Any(), gomock.Any()).Return("", boom)
	if _, err := e.svc.Connection(as(bob)); !errors.Is(err, boom) {
		t.Fatalf("provider failure: %v", err)
	}
	if _, err := e.svc.Connection(context.Background()); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("no principal: %v", err)
	}
}

func TestConnectionWithoutPublicURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	svc := scm.New(scm.Config{PublicURL: "not a url"}, e.deps)
	// The provider is not asked (the mock expects no call).
	st, err := svc.Connection(as(bob))
	if err != nil || st.Configured || st.Setup == "" || st.Connected {
		t.Fatalf("%+v, %v", st, err)
	}
}
