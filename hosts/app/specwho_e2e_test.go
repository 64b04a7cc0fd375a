package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/ports"
)

// TestSpecWhoMadeItSandbox: in the sandbox, a generated version says it was
// made by the sandbox's scripted model (generated_by.sandbox), not by the
// configured model's name, and a version edited by hand names its editor
// (generated_by.user_name), on both databases.
func TestSpecWhoMadeItSandbox(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := startSandboxOn(t, d)
			token := h.sb.Token()
			code, raw := h.send(token, "POST", "/pse/sessions", map[string]any{"name": "Who made it",
				"inputs": []map[string]string{{"kind": "note", "title": "Brief", "content": "Customers want to reorder a past order in one click."}}})
			var sess struct{ ID string }
			if err := json.Unmarshal(raw, &sess); code != 201 || err != nil {
				t.Fatalf("create: %d %s", code, raw)
			}
			if code, raw := h.send(token, "POST", "/pse/sessions/"+sess.ID+"/generate", nil); code != 202 {
				t.Fatalf("generate: %d %s", code, raw)
			}
			type generatedBy struct {
				Kind, Model string
				Sandbox     *bool
				UserID      string `json:"user_id"`
				UserName    string `json:"user_name"`
			}
			var view struct {
				Status    string
				Artifacts []struct {
					Stage, Model string
					Version      int
					Data         json.RawMessage
					GeneratedBy  generatedBy `json:"generated_by"`
				}
			}
			for deadline := time.Now().Add(time.Minute); ; {
				h.get(token, "/pse/sessions/"+sess.ID, &view)
				if view.Status != "generating" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("still generating after a minute")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if view.Status != "ready" || len(view.Artifacts) != 1 {
				t.Fatalf("after generating: %+v", view)
			}
			a := view.Artifacts[0]
			if g := a.GeneratedBy; a.Model != ports.SandboxModel || g.Kind != "model" || g.Model != ports.SandboxModel || g.Sandbox == nil || !*g.Sandbox {
				t.Fatalf("a sandbox version: model %q, generated_by %+v; want the sandbox model", a.Model, g)
			}

			var doc map[string]any
			if err := json.Unmarshal(a.Data, &doc); err != nil {
				t.Fatal(err)
			}
			doc["title"] = "Reorder in one click"
			body, _ := json.Marshal(map[string]any{"data": doc})
			req, _ := http.NewRequest("PUT", h.base+"/pse/sessions/"+sess.ID+"/stages/scope", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("If-Match", `"1"`)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			var edited struct {
				Version     int
				GeneratedBy generatedBy `json:"generated_by"`
			}
			if err := json.Unmarshal(raw, &edited); resp.StatusCode != 200 || err != nil || edited.Version != 2 ||
				edited.GeneratedBy.Kind != "user" || edited.GeneratedBy.UserName != sandbox.Email || edited.GeneratedBy.Sandbox != nil {
				t.Fatalf("edit: %d %s", resp.StatusCode, raw)
			}

			var versions struct {
				Items []struct {
					GeneratedBy generatedBy `json:"generated_by"`
				}
			}
			h.get(token, "/pse/sessions/"+sess.ID+"/stages/scope/versions", &versions)
			if len(versions.Items) != 2 || versions.Items[0].GeneratedBy.UserName != sandbox.Email ||
				versions.Items[1].GeneratedBy.Sandbox == nil || !*versions.Items[1].GeneratedBy.Sandbox {
				t.Fatalf("versions: %+v", versions.Items)
			}
		})
	}
}
