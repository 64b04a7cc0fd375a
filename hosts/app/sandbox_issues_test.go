package app_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestSandboxSpecToIssues is issue 24's first check, on the sandbox: the
// demo user's specification, generated through its PRPs by the demo model,
// is exported to the demo repository in the sandbox's GitHub, one issue per
// story and a tracking issue per epic; a second export changes none of
// their numbers.
func TestSandboxSpecToIssues(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := startSandboxOn(t, d)
			token, _, repoIDs := h.checkSeed()
			var repos struct {
				Items []struct {
					ID       string `json:"id"`
					FullName string `json:"full_name"`
				} `json:"items"`
			}
			h.get(token, "/scm/repos", &repos)
			repoID := ""
			for _, r := range repos.Items {
				if r.FullName == "demo/storefront" {
					repoID = r.ID
				}
			}
			if repoID == "" {
				t.Fatalf("no demo/storefront among %v (%v)", repos.Items, repoIDs)
			}

			code, body := h.send(token, "POST", "/pse/sessions", map[string]any{
				"name":   "Gift cards",
				"inputs": []map[string]string{{"kind": "note", "title": "Brief", "content": "- Customers buy a gift card online\n- Customers redeem it at checkout\n"}},
			})
			var s struct{ ID string }
			if err := json.Unmarshal(body, &s); code != 201 || err != nil {
				t.Fatalf("create session: %d %s", code, body)
			}
			if code, body := h.send(token, "POST", "/pse/sessions/"+s.ID+"/generate", map[string]string{"through": "prps"}); code != 202 {
				t.Fatalf("generate through prps: %d %s", code, body)
			}
			waitUntil(t, "the five stages", 60*time.Second, func() bool {
				var v specView
				h.get(token, "/pse/sessions/"+s.ID, &v)
				if v.Status == "failed" {
					t.Fatalf("generation failed: %+v", v.Error)
				}
				return v.Status == "ready" && len(v.Artifacts) == 5
			})

			export := func() map[string]int {
				code, body := h.send(token, "POST", "/pse/sessions/"+s.ID+"/export/github", map[string]any{"repo_id": repoID})
				var e struct {
					ExportID string `json:"export_id"`
				}
				if err := json.Unmarshal(body, &e); code != 202 || err != nil {
					t.Fatalf("export: %d %s", code, body)
				}
				var out struct {
					Status string
					Issues []struct {
						Kind, Ref string
						Number    int
						HTMLURL   string `json:"html_url"`
					}
				}
				waitUntil(t, "the export", 30*time.Second, func() bool {
					h.get(token, "/pse/sessions/"+s.ID+"/export/github/"+e.ExportID, &out)
					return out.Status == "done" || out.Status == "failed"
				})
				if out.Status != "done" {
					t.Fatalf("export: %+v", out)
				}
				numbers := map[string]int{}
				kinds := map[string]int{}
				for _, is := range out.Issues {
					numbers[is.Ref] = is.Number
					kinds[is.Kind]++
					if is.Number <= 0 || is.HTMLURL == "" {
						t.Errorf("issue %+v has no number or URL", is)
					}
				}
				if kinds["story"] == 0 || kinds["epic"] == 0 {
					t.Fatalf("exported %v, want stories and epics", kinds)
				}
				return numbers
			}
			first := export()
			second := export()
			if !maps.Equal(first, second) {
				t.Fatalf("the second export changed issue numbers: %v then %v", first, second)
			}
			t.Logf("issues: %v", slices.Sorted(maps.Keys(first)))
		})
	}
}

// waitUntil polls cond until it holds, or fails the test after d.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
