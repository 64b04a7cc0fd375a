package scm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// activityEnv connects alice to acme/web with webhook activity stored and
// the provider reporting more, one entry of which both know.
func activityEnv(t *testing.T) (*env, string, []string) {
	t.Helper()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	ago := func(m int) time.Time { return fixture.Epoch.Add(-time.Duration(m) * time.Minute) }
	if err := e.store.AppendActivity(t.Context(),
		ports.SCMActivity{ID: "delivery:d1", RepoID: 101, Summary: "w1", At: ago(1), Source: "webhook"},
		ports.SCMActivity{ID: "delivery:d5", RepoID: 101, Summary: "w5", At: ago(5), Source: "webhook"},
		ports.SCMActivity{ID: "delivery:d3", RepoID: 101, Summary: "w3", At: ago(3), Source: "webhook"},
		ports.SCMActivity{ID: "delivery:d7", RepoID: 101, Summary: "w7", At: ago(7), Source: "webhook"},
		ports.SCMActivity{ID: "delivery:x", RepoID: 102, Summary: "another repository", At: ago(2), Source: "webhook"},
	); err != nil {
		t.Fatal(err)
	}
	provided := []ports.SCMActivity{
		{ID: "event:2", RepoID: 101, Summary: "a2", At: ago(2), Source: "api"},
		{ID: "delivery:d3", RepoID: 101, Summary: "a3", At: ago(3), Source: "api"},
		{ID: "event:4", RepoID: 101, Summary: "a4", At: ago(4), Source: "api"},
		{ID: "event:6", RepoID: 101, Summary: "a6", At: ago(6), Source: "api"},
		{ID: "event:8", RepoID: 101, Summary: "a8", At: ago(8), Source: "api"},
	}
	e.prov.EXPECT().ListActivity(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, _, _, _ string, p ports.Page) ([]ports.SCMActivity, string, error) {
			cursor, ok := strings.CutPrefix(p.Cursor, "gh:")
			if p.Cursor != "" && !ok {
				t.Errorf("provider cursor %q is not one it gave", p.Cursor)
			}
			list, next, err := paginate(provided, ports.Page{Limit: p.Limit, Cursor: cursor})
			if next != "" {
				next = "gh:" + next
			}
			return list, next, err
		})
	return e, ids[0], []string{"w1", "a2", "w3", "a4", "w5", "a6", "w7", "a8"}
}

// readAll pages through the activity with the limits given in turn (the last
// one repeating) and returns the summaries.
func readAll(t *testing.T, e *env, repoID string, limits ...int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		limit := limits[min(i, len(limits)-1)]
		list, next, err := e.svc.Activity(as(alice), repoID, ports.Page{Limit: limit, Cursor: cursor})
		if limit == 0 {
			limit = scm.DefaultPageLimit
		}
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if len(list) > limit || (len(list) == 0 && next != "") {
			t.Fatalf("page %d: %d entries with next %q for limit %d", i, len(list), next, limit)
		}
		for _, a := range list {
			got = append(got, a.Summary)
		}
		if cursor = next; cursor == "" || i > 20 {
			return got
		}
	}
}

func TestActivityMergesNewestFirst(t *testing.T) {
	t.Parallel()
	for _, limits := range [][]int{{0}, {100}, {1}, {2}, {3}, {2, 5}, {5, 1}} {
		t.Run(fmt.Sprint(limits), func(t *testing.T) {
			t.Parallel()
			e, repoID, want := activityEnv(t)
			if got := readAll(t, e, repoID, limits...); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("activity %v\nwant     %v", got, want)
			}
		})
	}
}

func TestActivityErrors(t *testing.T) {
	t.Parallel()
	e, repoID, _ := activityEnv(t)
	for _, cursor := range []string{"not base64!", "e30", "eyJuIjo1MDAwfQ"} {
		_, _, err := e.svc.Activity(as(alice), repoID, ports.Page{Cursor: cursor})
		wantErr(t, "cursor "+cursor, err, ports.KindInvalid, "")
	}
	_, _, err := e.svc.Activity(as(alice), repoID, ports.Page{Limit: -1})
	wantErr(t, "limit", err, ports.KindInvalid, "")

	f := newEnv(t, scm.Config{})
	ids := f.seed(alice, "gho_alice", webRepo)
	f.prov.EXPECT().ListActivity(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).
		Return(nil, "", &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second})
	_, _, err = f.svc.Activity(as(alice), ids[0], ports.Page{})
	wantErr(t, "rate limited", err, ports.KindRateLimited, "")
}

// TestActivityKeepsOnlyWebURLs: what the API answers carries only absolute
// http(s) URLs, whether the entry came from the provider or was stored
// before URLs were checked.
func TestActivityKeepsOnlyWebURLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	ids := e.seed(alice, "gho_alice", webRepo)
	ago := func(m int) time.Time { return fixture.Epoch.Add(-time.Duration(m) * time.Minute) }
	if err := e.store.AppendActivity(t.Context(),
		ports.SCMActivity{ID: "delivery:d1", RepoID: 101, Summary: "stored bad", URL: "javascript:alert(1)", At: ago(1), Source: "webhook"},
		ports.SCMActivity{ID: "delivery:d2", RepoID: 101, Summary: "stored good", URL: "https://github.com/acme/web/pull/1", At: ago(2), Source: "webhook"},
	); err != nil {
		t.Fatal(err)
	}
	e.prov.EXPECT().ListActivity(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).Return([]ports.SCMActivity{
		{ID: "event:3", RepoID: 101, Summary: "provided bad", URL: "data:text/html,<script>alert(1)</script>", At: ago(3), Source: "api"},
		{ID: "event:4", RepoID: 101, Summary: "provided good", URL: "http://ghe.example/acme/web/commit/ab12", At: ago(4), Source: "api"},
	}, "", nil)
	list, _, err := e.svc.Activity(as(alice), ids[0], ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"stored bad": "", "stored good": "https://github.com/acme/web/pull/1",
		"provided bad": "", "provided good": "http://ghe.example/acme/web/commit/ab12"}
	if len(list) != len(want) {
		t.Fatalf("activity %+v", list)
	}
	for _, a := range list {
		if u, ok := want[a.Summary]; !ok || a.URL != u {
			t.Errorf("%s: URL %q, want %q", a.Summary, a.URL, u)
		}
	}
}
