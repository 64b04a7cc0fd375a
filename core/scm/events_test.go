package scm_test

import (
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// TestEntriesOfHostileText maps events whose text holds NUL, other control
// characters, bidi overrides, lone surrogates and invalid UTF-8: they are
// recorded, never refused, and made one line.
func TestEntriesOfHostileText(t *testing.T) {
	t.Parallel()
	for _, hostile := range []string{"a\x00b", "a\x07b", "a\u202eb", "a\ufffdb", "a\xffb", "\ufeffa", "a\nb"} {
		for _, ev := range []ports.SCMWebhookEvent{
			{Kind: "push", Ref: "refs/heads/" + hostile, RepoID: 1, RepoURL: "https://h/" + hostile, Actor: hostile, Commits: 1, Compare: hostile, After: "ab12"},
			{Kind: "pull_request", Action: "opened", Number: 2, HasPull: true, Title: hostile, URL: hostile, Ref: hostile, RepoID: 1, Actor: hostile},
			{Kind: "create", Ref: hostile, RefType: "branch", RepoID: 1, RepoURL: hostile, Actor: hostile},
			{Kind: "release", Action: "published", HasRelease: true, Ref: hostile, URL: hostile, RepoID: 1, Actor: hostile},
			{Kind: "issue_comment", Action: "created", HasIssue: true, Number: 3, URL: hostile, RepoID: 1, Actor: hostile},
		} {
			entries, err := scm.EntriesOf(ev)
			if err != nil || len(entries) != 1 {
				t.Errorf("%s with %q: %v, %+v", ev.Kind, hostile, err, entries)
				continue
			}
			if e := entries[0]; strings.ContainsAny(e.Actor+e.Ref+e.Summary, "\x00\x07\n") || e.Kind != ev.Kind {
				t.Errorf("%s with %q: %+v", ev.Kind, hostile, e)
			}
		}
	}
}

// TestEntriesOfUnusable: an event lacking what it needs is refused with the
// reason; an action not worth recording, or an event not recorded, is none.
func TestEntriesOfUnusable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev     ports.SCMWebhookEvent
		reason string
	}{
		{ports.SCMWebhookEvent{Kind: "push", Ref: "refs/heads/x", Actor: "a", Commits: 1}, "push payload lacks repository.id"},
		{ports.SCMWebhookEvent{Kind: "push", Ref: "refs/heads/x", RepoID: 1, Actor: "\x00", Commits: 1}, "push payload lacks sender.login"},
		{ports.SCMWebhookEvent{Kind: "push", RepoID: 1, Actor: "a", Commits: 1}, "push payload lacks ref"},
		{ports.SCMWebhookEvent{Kind: "pull_request", Action: "opened", RepoID: 1, Actor: "a"}, "pull_request payload lacks pull_request"},
		{ports.SCMWebhookEvent{Kind: "pull_request", Action: "opened", HasPull: true, RepoID: 1, Actor: "a"}, "pull_request payload lacks number"},
		{ports.SCMWebhookEvent{Kind: "delete", Ref: "x", RepoID: 1, Actor: "a"}, "delete payload lacks ref_type"},
		{ports.SCMWebhookEvent{Kind: "create", RefType: "tag", RepoID: 1, Actor: "a"}, "create payload lacks ref"},
		{ports.SCMWebhookEvent{Kind: "release", Action: "published", RepoID: 1, Actor: "a"}, "release payload lacks release.tag_name"},
		{ports.SCMWebhookEvent{Kind: "issue_comment", Action: "created", RepoID: 1, Actor: "a"}, "issue_comment payload lacks issue.number"},
		{ports.SCMWebhookEvent{Kind: "pull_request", Action: "labeled", RepoID: 1, Actor: "a"}, ""},
		{ports.SCMWebhookEvent{Kind: "push", Deleted: true}, ""},
		{ports.SCMWebhookEvent{Kind: "create", RefType: "repository"}, ""},
		{ports.SCMWebhookEvent{Kind: "star", RepoID: 1, Actor: "a"}, ""},
	} {
		entries, err := scm.EntriesOf(tc.ev)
		if tc.reason == "" {
			if err != nil || len(entries) != 0 {
				t.Errorf("%+v: %v, %+v; want none", tc.ev, err, entries)
			}
			continue
		}
		if err == nil || err.Error() != tc.reason {
			t.Errorf("%+v: %v, %+v; want %q", tc.ev, err, entries, tc.reason)
		}
	}
}

// TestEntriesOfKeepsOnlyWebURLs: an entry's URL is an absolute http(s) URL
// or "": a payload's javascript:, data: or relative link is dropped.
func TestEntriesOfKeepsOnlyWebURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/acme/web/releases/tag/v1", "https://github.com/acme/web/releases/tag/v1"},
		{"HTTP://ghe.example/acme/web/pull/2", "HTTP://ghe.example/acme/web/pull/2"},
		{"javascript:alert(document.cookie)", ""},
		{"JavaScript://github.com/%0aalert(1)", ""},
		{"data:text/html,<script>alert(1)</script>", ""},
		{"vbscript:msgbox(1)", ""},
		{"//evil.example/x", ""},
		{"/\\evil.example/x", ""},
		{"http:/\\evil.example", ""},
		{"https:evil.example", ""},
		{" javascript:alert(1)", ""},
	} {
		for _, ev := range []ports.SCMWebhookEvent{
			{Kind: "release", Action: "published", HasRelease: true, Ref: "v1", URL: tc.url, RepoID: 1, Actor: "mallory"},
			{Kind: "pull_request", Action: "opened", HasPull: true, Number: 2, Title: "t", URL: tc.url, RepoID: 1, Actor: "mallory"},
			{Kind: "issue_comment", Action: "created", HasIssue: true, Number: 3, URL: tc.url, RepoID: 1, Actor: "mallory"},
			{Kind: "push", Ref: "refs/heads/main", Commits: 1, Compare: tc.url, RepoID: 1, Actor: "mallory"},
		} {
			entries, err := scm.EntriesOf(ev)
			if err != nil || len(entries) != 1 || entries[0].URL != tc.want {
				t.Errorf("%s with the URL %q: %v %+v, want the URL %q", ev.Kind, tc.url, err, entries, tc.want)
			}
		}
	}
	// A repository URL that is not a web URL makes no link either.
	for _, ev := range []ports.SCMWebhookEvent{
		{Kind: "push", Ref: "refs/heads/main", Commits: 1, After: "ab12cd", RepoURL: "javascript:alert(1)//", RepoID: 1, Actor: "mallory"},
		{Kind: "create", Ref: "feature", RefType: "branch", RepoURL: "javascript:alert(1)//", RepoID: 1, Actor: "mallory"},
	} {
		if entries, err := scm.EntriesOf(ev); err != nil || len(entries) != 1 || entries[0].URL != "" {
			t.Errorf("%s with a javascript: repository URL: %v %+v", ev.Kind, err, entries)
		}
	}
}
