package scm_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// FuzzParseWebhook parses arbitrary bodies of every event kind, as JSON and
// as forms: it never panics, and every error is a ports.Error.
func FuzzParseWebhook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
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
	f.Fuzz(func(t *testing.T, event, contentType string, body []byte) {
		entries, err := scm.ParseWebhook(event, contentType, body)
		if err != nil {
			if _, ok := ports.AsError(err); !ok {
				t.Fatalf("error %v (%T) is not a ports.Error", err, err)
			}
			return
		}
		for _, e := range entries {
			if e.RepoID == 0 || e.Kind != event || e.Actor == "" || e.Summary == "" {
				t.Fatalf("entry %+v", e)
			}
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

// TestParseWebhookHostileText parses payloads whose text holds NUL, other
// control characters, bidi overrides, lone surrogate escapes and invalid
// UTF-8: they are recorded, never refused.
func TestParseWebhookHostileText(t *testing.T) {
	t.Parallel()
	for _, hostile := range []string{`a\u0000b`, `a\u0007b`, `a\u202eb`, `a\ud800b`, "a\xffb", `\ufeffa`} {
		for _, tc := range []struct{ event, body string }{
			{"push", `{"ref":"refs/heads/H","repository":{"id":1,"html_url":"https://h/H"},"sender":{"login":"H"},"commits":[{}],"compare":"https://h/H","after":"ab12"}`},
			{"pull_request", `{"action":"opened","number":2,"pull_request":{"title":"H","html_url":"H","head":{"ref":"H"}},"repository":{"id":1},"sender":{"login":"H"}}`},
			{"create", `{"ref":"H","ref_type":"branch","repository":{"id":1,"html_url":"H"},"sender":{"login":"H"}}`},
			{"release", `{"action":"published","release":{"tag_name":"H","html_url":"H"},"repository":{"id":1},"sender":{"login":"H"}}`},
			{"issue_comment", `{"action":"created","issue":{"number":3},"comment":{"html_url":"H"},"repository":{"id":1},"sender":{"login":"H"}}`},
		} {
			body := strings.ReplaceAll(tc.body, "H", hostile)
			entries, err := scm.ParseWebhook(tc.event, "application/json", []byte(body))
			if err != nil || len(entries) != 1 {
				t.Errorf("%s with %q: %v, %+v", tc.event, hostile, err, entries)
			}
		}
	}
}
