package github_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/ports"
)

// parseBody reads a raw body of event as it comes, JSON or a form as
// contentType says, signed with a test secret.
func parseBody(event, contentType string, body []byte) (*ports.SCMWebhookEvent, error) {
	secret := []byte("fuzz")
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	check, err := github.Webhooks{}.CheckWebhook("sha256="+hex.EncodeToString(mac.Sum(nil)), contentType, secret)
	if err != nil {
		return nil, err
	}
	if _, err := check.Write(body); err != nil {
		return nil, err
	}
	if err := check.Verify(); err != nil {
		return nil, err
	}
	payload, err := check.Payload(body)
	if err != nil {
		return nil, err
	}
	return github.Webhooks{}.ParseWebhook(event, payload)
}

// FuzzParseWebhook reads arbitrary bodies of every event kind, as JSON and
// as forms: it never panics, every error is a ports.Error, and an event
// read is of the kind asked.
func FuzzParseWebhook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "webhooks", "*.json"))
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		event := eventOf(filepath.Base(name))
		f.Add(event, "application/json", body)
		f.Add(event, "application/x-www-form-urlencoded", []byte(url.Values{"payload": {string(body)}}.Encode()))
	}
	f.Add("push", "", []byte(`{"ref":"refs/heads/\u0000\xff","repository":{"id":1},"sender":{"login":"a\u202e"},"commits":[{}],"after":"ab12"}`))
	f.Add("pull_request", "application/json; charset=utf-8", []byte(`{"action":"opened","number":1,"pull_request":{"title":"\ud800"},"repository":{"id":1},"sender":{"login":"x"}}`))
	f.Add("create", "application/x-www-form-urlencoded", []byte("payload=%7B%7D&payload=x"))
	f.Add("release", "", []byte(`null`))
	f.Fuzz(func(t *testing.T, event, contentType string, body []byte) {
		ev, err := parseBody(event, contentType, body)
		if err != nil {
			if _, ok := ports.AsError(err); !ok {
				t.Fatalf("error %v (%T) is not a ports.Error", err, err)
			}
			return
		}
		if ev != nil && ev.Kind != event {
			t.Fatalf("event %q read as %+v", event, ev)
		}
	})
}

// eventOf is the event of a testdata payload's file name ("create_branch.json"
// is a create event).
func eventOf(name string) string {
	name = strings.TrimSuffix(name, ".json")
	for _, e := range []string{"pull_request", "issue_comment", "push", "create", "delete", "release", "ping"} {
		if strings.HasPrefix(name, e) {
			return e
		}
	}
	return name
}

// TestParseWebhookPayloads reads GitHub's payloads into events: the fields
// devpilot records, whichever way the body came.
func TestParseWebhookPayloads(t *testing.T) {
	t.Parallel()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "webhooks", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		file, event string
		check       func(e ports.SCMWebhookEvent) bool
	}{
		{"push", "push", func(e ports.SCMWebhookEvent) bool {
			return e.RepoID != 0 && e.Actor != "" && strings.HasPrefix(e.Ref, "refs/") && e.Commits > 0 && e.HeadCommit != ""
		}},
		{"pull_request_opened", "pull_request", func(e ports.SCMWebhookEvent) bool {
			return e.Action == "opened" && e.HasPull && e.Number > 0 && e.Title != "" && e.URL != ""
		}},
		{"pull_request_merged", "pull_request", func(e ports.SCMWebhookEvent) bool { return e.Action == "closed" && e.Merged }},
		{"create_branch", "create", func(e ports.SCMWebhookEvent) bool { return e.RefType == "branch" && e.Ref != "" && e.RepoURL != "" }},
		{"delete_tag", "delete", func(e ports.SCMWebhookEvent) bool { return e.RefType == "tag" && e.Ref != "" }},
		{"release_published", "release", func(e ports.SCMWebhookEvent) bool {
			return e.Action == "published" && e.HasRelease && e.Ref != ""
		}},
		{"issue_comment_created", "issue_comment", func(e ports.SCMWebhookEvent) bool {
			return e.Action == "created" && e.HasIssue && e.Number > 0 && e.URL != ""
		}},
	} {
		body := read(tc.file)
		for _, in := range []struct{ contentType, body string }{
			{"application/json", string(body)},
			{"application/x-www-form-urlencoded", url.Values{"payload": {string(body)}}.Encode()},
		} {
			ev, err := parseBody(tc.event, in.contentType, []byte(in.body))
			if err != nil || ev == nil || ev.Kind != tc.event || !tc.check(*ev) {
				t.Errorf("%s as %s: %v, %+v", tc.file, in.contentType, err, ev)
			}
		}
	}
	if ev, err := parseBody("ping", "", read("ping")); ev != nil || err != nil {
		t.Errorf("ping = %+v, %v; want nothing", ev, err)
	}
}

// TestWebhookRefuses: GitHub's signature form, its content types, a form
// without one payload, a payload that is not JSON or not the event's.
func TestWebhookRefuses(t *testing.T) {
	t.Parallel()
	w := github.Webhooks{}
	secret := []byte("s")
	for _, tc := range []struct{ sig, contentType string }{
		{"", ""}, {"sha256=", ""}, {"sha1=" + strings.Repeat("a", 64), ""}, {"sha256=" + strings.Repeat("z", 64), ""}, {strings.Repeat("a", 64), ""},
	} {
		if _, err := w.CheckWebhook(tc.sig, tc.contentType, secret); !ports.IsKind(err, ports.KindUnauthenticated) {
			t.Errorf("signature %q: %v", tc.sig, err)
		}
	}
	if _, err := w.CheckWebhook("sha256="+strings.Repeat("a", 64), "text/plain", secret); !ports.IsKind(err, ports.KindUnsupportedMedia) {
		t.Errorf("text/plain: %v", err)
	}
	check, err := w.CheckWebhook("sha256="+strings.Repeat("a", 64), "", secret)
	if err != nil {
		t.Fatal(err)
	}
	check.Write([]byte("{}"))
	if err := check.Verify(); !ports.IsKind(err, ports.KindUnauthenticated) {
		t.Errorf("Verify of a wrong signature: %v", err)
	}
	for _, tc := range []struct{ contentType, body string }{
		{"", "{"}, {"application/x-www-form-urlencoded", "payload=%7B%7D&payload=%7B%7D"}, {"application/x-www-form-urlencoded", "a=1"},
		{"application/x-www-form-urlencoded", "payload=%zz"},
	} {
		c, _ := w.CheckWebhook("sha256="+strings.Repeat("a", 64), tc.contentType, secret)
		if _, err := c.Payload([]byte(tc.body)); !ports.IsKind(err, ports.KindMalformed) {
			t.Errorf("%s %q: %v", tc.contentType, tc.body, err)
		}
	}
	_, err = w.ParseWebhook("push", []byte(`{"commits":"many"}`))
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindMalformed || !strings.HasPrefix(pe.Message, "push payload cannot be read: ") {
		t.Errorf("a push whose commits are not a list: %v", err)
	}
	if ev, err := w.ParseWebhook("release", []byte(`null`)); err != nil || ev == nil || ev.HasRelease {
		t.Errorf("null release = %+v, %v", ev, err)
	}
}
