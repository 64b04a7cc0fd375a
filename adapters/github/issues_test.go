package github_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/ports"
)

func TestIssuesAndLabels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	repo := f.fake.AddRepo("alice", "shop", fakegithub.Private())
	repo.Pull(fakegithub.Pull{Title: "An open pull request"})
	ctx := t.Context()

	if err := f.client.CreateLabel(ctx, aliceToken, "alice", "shop", ports.SCMLabel{Name: "devpilot", Color: "5319e7", Description: "Exported"}); err != nil {
		t.Fatalf("CreateLabel: %v", err)
	}
	if err := f.client.CreateLabel(ctx, aliceToken, "alice", "shop", ports.SCMLabel{Name: "DevPilot", Color: "5319e7"}); ports.KindOf(err) != ports.KindConflict {
		t.Fatalf("CreateLabel of an existing name = %v, want conflict", err)
	}
	labels, next, err := f.client.ListLabels(ctx, aliceToken, "alice", "shop", ports.Page{})
	if err != nil || next != "" || len(labels) != 1 || labels[0] != (ports.SCMLabel{Name: "devpilot", Color: "5319e7", Description: "Exported"}) {
		t.Fatalf("ListLabels = %+v, %q, %v", labels, next, err)
	}

	body := "Body — ✓ 日本\n\n<!-- devpilot:spec=x:ref=ST-1.1 -->"
	is, err := f.client.CreateIssue(ctx, aliceToken, "alice", "shop", ports.SCMIssueInput{Title: "[ST-1.1] Pay", Body: body, Labels: []string{"devpilot", "epic:EP-1"}})
	if err != nil {
		t.Fatalf("CreateIssue: %v", err)
	}
	if is.Number != 2 || is.State != "open" || is.Body != body || !slices.Equal(is.Labels, []string{"devpilot", "epic:EP-1"}) ||
		!strings.HasSuffix(is.HTMLURL, "/alice/shop/issues/2") {
		t.Fatalf("CreateIssue = %+v (numbers follow the pull request's)", is)
	}
	up, err := f.client.UpdateIssue(ctx, aliceToken, "alice", "shop", is.Number, ports.SCMIssueInput{Title: "[ST-1.1] Pay now", Body: body, Labels: []string{"devpilot"}})
	if err != nil || up.Number != is.Number || up.Title != "[ST-1.1] Pay now" || !slices.Equal(up.Labels, []string{"devpilot"}) {
		t.Fatalf("UpdateIssue = %+v, %v", up, err)
	}
	if _, err := f.client.UpdateIssue(ctx, aliceToken, "alice", "shop", 99, ports.SCMIssueInput{Title: "x"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("UpdateIssue of an unknown issue = %v, want not_found", err)
	}
	if _, err := f.client.CreateIssue(ctx, aliceToken, "alice", "shop", ports.SCMIssueInput{Title: " "}); ports.KindOf(err) != ports.KindInvalid {
		t.Errorf("CreateIssue without a title = %v, want invalid", err)
	}
	if _, err := f.client.CreateIssue(ctx, bobToken, "alice", "shop", ports.SCMIssueInput{Title: "x"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("CreateIssue in a repository bob cannot see = %v, want not_found", err)
	}
	if _, err := f.client.CreateIssue(ctx, aliceToken, "alice", "../x", ports.SCMIssueInput{Title: "x"}); ports.KindOf(err) != ports.KindInvalid {
		t.Errorf("CreateIssue in a malformed repository name = %v, want invalid", err)
	}

	for i := range 3 {
		if _, err := f.client.CreateIssue(ctx, aliceToken, "alice", "shop", ports.SCMIssueInput{Title: fmt.Sprintf("more %d", i), Labels: []string{"devpilot"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.client.CreateIssue(ctx, aliceToken, "alice", "shop", ports.SCMIssueInput{Title: "unlabelled"}); err != nil {
		t.Fatal(err)
	}
	var all []ports.SCMIssue
	cursor := ""
	for range 5 {
		page, next, err := f.client.ListIssuesByLabel(ctx, aliceToken, "alice", "shop", "devpilot", ports.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListIssuesByLabel: %v", err)
		}
		all = append(all, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	var numbers []int
	for _, is := range all {
		numbers = append(numbers, is.Number)
	}
	if !slices.Equal(numbers, []int{2, 3, 4, 5}) || all[0].Body != body {
		t.Errorf("issues labelled devpilot, oldest first over pages = %v", numbers)
	}
	if got := len(repo.Issues()); got != 5 {
		t.Errorf("the fake holds %d issues, want 5", got)
	}
}

func TestIssueWritesUnderSecondaryRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddRepo("alice", "shop")
	f.fake.Inject("/repos/*/*/issues", fakegithub.SecondaryRateLimitFault(3*time.Second).Times(1))
	_, err := f.client.CreateIssue(t.Context(), aliceToken, "alice", "shop", ports.SCMIssueInput{Title: "x"})
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindRateLimited || pe.RetryAfter != 3*time.Second {
		t.Fatalf("CreateIssue under a secondary rate limit = %#v, want rate_limited after 3s", err)
	}
	if _, err := f.client.CreateIssue(t.Context(), aliceToken, "alice", "shop", ports.SCMIssueInput{Title: "x"}); err != nil {
		t.Fatalf("CreateIssue once it lifted: %v", err)
	}
	f.fake.SecondaryRateLimit(time.Minute)
	if err := f.client.CreateLabel(t.Context(), aliceToken, "alice", "shop", ports.SCMLabel{Name: "l", Color: "ffffff"}); ports.KindOf(err) != ports.KindRateLimited {
		t.Errorf("CreateLabel under the secondary rate limit = %v, want rate_limited", err)
	}
	if _, _, err := f.client.ListIssuesByLabel(t.Context(), aliceToken, "alice", "shop", "l", ports.Page{}); ports.KindOf(err) != ports.KindRateLimited {
		t.Errorf("ListIssuesByLabel under the secondary rate limit = %v, want rate_limited", err)
	}
}

func TestIssueWritesUnderPrimaryRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddRepo("alice", "shop")
	f.fake.RateLimit(time.Now().Add(90 * time.Second))
	_, err := f.client.UpdateIssue(t.Context(), aliceToken, "alice", "shop", 1, ports.SCMIssueInput{Title: "x"})
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindRateLimited || pe.RetryAfter < 80*time.Second || pe.RetryAfter > 100*time.Second {
		t.Fatalf("UpdateIssue with the rate limit exhausted = %#v, want rate_limited until the reset", err)
	}
}
