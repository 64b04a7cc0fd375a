package fakegithub_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

// send sends a JSON request to the fake and decodes a JSON answer into out
// (when not nil).
func send(t *testing.T, s *fakegithub.Server, method, path, token, body string, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp
}

func TestIssuesWireFormat(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("tok-alice")
	s.AddUser("bob", 2).Token("tok-bob")
	repo := s.AddRepo("alice", "shop", fakegithub.Private())

	if resp := send(t, s, "POST", "/repos/alice/shop/issues", "", `{"title":"x"}`, nil); resp.StatusCode != 401 {
		t.Errorf("anonymous create: %d, want 401", resp.StatusCode)
	}
	if resp := send(t, s, "POST", "/repos/alice/shop/issues", "tok-bob", `{"title":"x"}`, nil); resp.StatusCode != 404 {
		t.Errorf("create in a repository bob cannot see: %d, want 404", resp.StatusCode)
	}
	var bad struct {
		Message string
		Errors  []struct{ Field, Code string }
	}
	if resp := send(t, s, "POST", "/repos/alice/shop/issues", "tok-alice", `{"body":"no title"}`, &bad); resp.StatusCode != 422 ||
		bad.Message != "Validation Failed" || len(bad.Errors) != 1 || bad.Errors[0].Field != "title" {
		t.Errorf("create without a title: %d %+v", resp.StatusCode, bad)
	}
	if resp := send(t, s, "POST", "/repos/alice/shop/issues", "tok-alice", `{"title":`, nil); resp.StatusCode != 400 {
		t.Errorf("create with a broken body: %d, want 400", resp.StatusCode)
	}

	var created map[string]any
	resp := send(t, s, "POST", "/api/v3/repos/alice/shop/issues", "tok-alice", `{"title":"First","body":"b","labels":["devpilot","epic:EP-1"]}`, &created)
	if resp.StatusCode != 201 || created["number"] != 1.0 || created["state"] != "open" || created["html_url"] != s.URL()+"/alice/shop/issues/1" ||
		resp.Header.Get("Location") != s.URL()+"/api/v3/repos/alice/shop/issues/1" || created["user"].(map[string]any)["login"] != "alice" {
		t.Fatalf("create: %d %v", resp.StatusCode, created)
	}
	if labels := created["labels"].([]any); len(labels) != 2 || labels[1].(map[string]any)["name"] != "epic:EP-1" {
		t.Errorf("labels %v", labels)
	}
	var patched map[string]any
	if resp := send(t, s, "PATCH", "/repos/alice/shop/issues/1", "tok-alice", `{"title":"Renamed","state":"closed"}`, &patched); resp.StatusCode != 200 ||
		patched["title"] != "Renamed" || patched["body"] != "b" || patched["state"] != "closed" || patched["closed_at"] == nil {
		t.Errorf("update: %d %v", resp.StatusCode, patched)
	}
	if resp := send(t, s, "PATCH", "/repos/alice/shop/issues/9", "tok-alice", `{"title":"x"}`, nil); resp.StatusCode != 404 {
		t.Errorf("update of an unknown issue: %d", resp.StatusCode)
	}
	var one map[string]any
	if resp := get(t, s, "/repos/alice/shop/issues/1", "tok-alice", &one); resp.StatusCode != 200 || one["title"] != "Renamed" {
		t.Errorf("get: %d %v", resp.StatusCode, one)
	}
	for i := range 3 {
		send(t, s, "POST", "/repos/alice/shop/issues", "tok-alice", `{"title":"more `+string(rune('a'+i))+`","labels":["devpilot"]}`, nil)
	}
	var open []map[string]any
	resp = get(t, s, "/repos/alice/shop/issues?labels=devpilot&per_page=1&direction=asc", "tok-alice", &open)
	if len(open) != 1 || open[0]["number"] != 2.0 || !strings.Contains(resp.Header.Get("Link"), `rel="next"`) || !strings.Contains(resp.Header.Get("Link"), "page=3") {
		t.Errorf("open issues labelled devpilot, oldest first: %v Link %q", open, resp.Header.Get("Link"))
	}
	var all []map[string]any
	get(t, s, "/repos/alice/shop/issues?labels=DEVPILOT&state=all&direction=asc", "tok-alice", &all)
	if len(all) != 4 || all[0]["number"] != 1.0 {
		t.Errorf("all issues labelled devpilot: %d", len(all))
	}

	if resp := send(t, s, "POST", "/repos/alice/shop/labels", "tok-alice", `{"name":"devpilot","color":"ffffff"}`, &bad); resp.StatusCode != 422 || bad.Errors[0].Code != "already_exists" {
		t.Errorf("create an existing label: %d %+v", resp.StatusCode, bad)
	}
	var label map[string]any
	if resp := send(t, s, "POST", "/repos/alice/shop/labels", "tok-alice", `{"name":"spec","color":"#5319E7","description":"d"}`, &label); resp.StatusCode != 201 ||
		label["color"] != "5319e7" || label["description"] != "d" {
		t.Errorf("create a label: %d %v", resp.StatusCode, label)
	}
	var labels []map[string]any
	if resp := get(t, s, "/repos/alice/shop/labels?per_page=2", "tok-alice", &labels); len(labels) != 2 || !strings.Contains(resp.Header.Get("Link"), `rel="last"`) {
		t.Errorf("labels: %v Link %q", labels, resp.Header.Get("Link"))
	}
	if got := len(repo.Labels()); got != 3 {
		t.Errorf("%d labels, want 3", got)
	}

	s.SecondaryRateLimit(30 * time.Second)
	resp = send(t, s, "POST", "/repos/alice/shop/issues", "tok-alice", `{"title":"x"}`, nil)
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "30" {
		t.Errorf("create under the secondary rate limit: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	s.ClearFaults()
	s.Inject("/repos/*/*/labels", fakegithub.SecondaryRateLimitFault(2*time.Second).Times(1))
	var limited struct {
		Message          string
		DocumentationURL string `json:"documentation_url"`
	}
	resp = send(t, s, "POST", "/repos/alice/shop/labels", "tok-alice", `{"name":"x"}`, &limited)
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(limited.Message, "secondary rate limit") ||
		!strings.Contains(limited.DocumentationURL, "secondary-rate-limits") {
		t.Errorf("injected secondary rate limit: %d %+v", resp.StatusCode, limited)
	}
	if resp := send(t, s, "POST", "/repos/alice/shop/labels", "tok-alice", `{"name":"x"}`, nil); resp.StatusCode != 201 {
		t.Errorf("after the injected limit: %d", resp.StatusCode)
	}
	if got := len(repo.Issues()); got != 4 {
		t.Errorf("%d issues, want 4", got)
	}
}
