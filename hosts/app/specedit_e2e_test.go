package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestSpecEditVersionsDiff edits a generated PRD by hand through the API
// (If-Match on its version), lists the PRD's versions and compares them, on
// both databases.
func TestSpecEditVersionsDiff(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			member, other := st.token("dev@example.com"), st.token("eve@example.com")
			id := st.noteSession(member, "Checkout", "We want one-click checkout for returning customers.")
			for _, stage := range []string{"scope", "prd", "epics"} {
				st.model.Enqueue(stageOutput(t, stage))
				if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil); code != 202 {
					t.Fatalf("generate %s: %d %s", stage, code, body)
				}
				st.waitReady(member, id)
			}
			path := "/api/v1/pse/sessions/" + id + "/stages/prd"
			var prd map[string]any
			raw, err := os.ReadFile(filepath.Join("..", "..", "core", "spec", "testdata", "prd.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &prd); err != nil {
				t.Fatal(err)
			}
			prd["summary"] = "Edited by hand."
			body := map[string]any{"data": prd}

			// Requests the API refuses before the engine sees them.
			for _, bad := range []struct {
				method, path string
				body         any
				want         int
			}{
				{"PUT", path, map[string]any{}, 400},                                      // no data
				{"PUT", "/pse/sessions/" + id + "/stages/design", body, 422},              // unknown stage
				{"GET", "/pse/sessions/" + id + "/stages/prd/diff?from=1", nil, 400},      // no to
				{"GET", "/pse/sessions/" + id + "/stages/prd/diff?from=0&to=1", nil, 422}, // not a version
				{"GET", "/pse/sessions/" + id + "/stages/design/versions", nil, 422},      // unknown stage
			} {
				if code, resp, _ := st.call(member, bad.method, bad.path, bad.body, "If-Match", `"1"`); code != bad.want {
					t.Errorf("%s %s: %d %s, want %d", bad.method, bad.path, code, resp, bad.want)
				}
			}
			if code, resp, _ := st.call(member, "PUT", path, body); code != 428 || !strings.Contains(string(resp), "version_required") {
				t.Fatalf("PUT without If-Match: %d %s", code, resp)
			}
			if code, resp, _ := st.call(member, "PUT", path, body, "If-Match", `"2"`); code != 412 || !strings.Contains(string(resp), "stale_version") {
				t.Fatalf("PUT on a stale version: %d %s", code, resp)
			}
			if code, _, _ := st.call(other, "PUT", path, body, "If-Match", `"1"`); code != 404 {
				t.Fatalf("PUT on another's session: %d", code)
			}
			bad := map[string]any{"data": map[string]any{"title": "No requirements"}}
			code, resp, _ := st.call(member, "PUT", path, bad, "If-Match", `"1"`)
			var problem struct {
				Code   string
				Errors []struct{ Field, Reason string }
			}
			if err := json.Unmarshal(resp, &problem); code != 422 || err != nil || problem.Code != "invalid_document" ||
				len(problem.Errors) == 0 || problem.Errors[0].Field != "data" {
				t.Fatalf("PUT an invalid document: %d %s", code, resp)
			}

			code, resp, _ = st.call(member, "PUT", path, body, "If-Match", `"1"`)
			var art struct {
				Version     int
				Model       string
				Content     string
				GeneratedBy struct {
					Kind     string
					UserID   string `json:"user_id"`
					UserName string `json:"user_name"`
					Sandbox  *bool
				} `json:"generated_by"`
			}
			if err := json.Unmarshal(resp, &art); code != 200 || err != nil || art.Version != 2 || art.Model != "" ||
				art.GeneratedBy.Kind != "user" || art.GeneratedBy.UserID == "" || art.GeneratedBy.UserName != "dev@example.com" ||
				art.GeneratedBy.Sandbox != nil || !strings.Contains(art.Content, "Edited by hand.") {
				t.Fatalf("PUT a valid document: %d %s", code, resp)
			}
			v := st.waitReady(member, id)
			for _, a := range v.Artifacts {
				if a.Stage == "epics" && !a.Stale {
					t.Errorf("epics v%d is not stale after the PRD was edited", a.Version)
				}
			}

			code, resp, _ = st.call(member, "GET", path+"/versions", nil)
			var versions struct {
				Items []struct {
					Version     int
					Model       string
					GeneratedBy struct {
						Kind, Model string
						UserName    string `json:"user_name"`
						Sandbox     *bool
					} `json:"generated_by"`
				}
			}
			// The stack's model is a plain fake answering as the configured
			// model: a real model's name, not the sandbox's.
			if err := json.Unmarshal(resp, &versions); code != 200 || err != nil || len(versions.Items) != 2 ||
				versions.Items[0].Version != 2 || versions.Items[0].GeneratedBy.Kind != "user" ||
				versions.Items[0].GeneratedBy.UserName != "dev@example.com" ||
				versions.Items[1].GeneratedBy.Kind != "model" || versions.Items[1].GeneratedBy.Model == "" ||
				versions.Items[1].GeneratedBy.Sandbox == nil || *versions.Items[1].GeneratedBy.Sandbox {
				t.Fatalf("GET versions: %d %s", code, resp)
			}

			code, resp, _ = st.call(member, "GET", "/pse/sessions/"+id+"/stages/prd/diff?from=1&to=2", nil)
			var diff struct {
				From, To       int
				Added, Removed []struct{ ID string }
				Changed        []struct {
					ID, Section string
					Fields      []string
				}
				TextDiff string `json:"text_diff"`
			}
			if err := json.Unmarshal(resp, &diff); code != 200 || err != nil || diff.From != 1 || diff.To != 2 ||
				len(diff.Added) != 0 || len(diff.Removed) != 0 || len(diff.Changed) != 1 ||
				diff.Changed[0].Section != "document" || strings.Join(diff.Changed[0].Fields, ",") != "summary" ||
				!strings.Contains(diff.TextDiff, "+Edited by hand.") {
				t.Fatalf("GET diff: %d %s", code, resp)
			}
			if code, resp, _ := st.call(member, "GET", "/pse/sessions/"+id+"/stages/prd/diff?from=1&to=9", nil); code != 404 {
				t.Fatalf("GET diff to a missing version: %d %s", code, resp)
			}
		})
	}
}
