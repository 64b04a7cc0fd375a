package app_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// stageOutput is the model's answer for a stage: the core's sample set, a
// consistent one whose traceability check is clean.
func stageOutput(t *testing.T, stage string) fakeopenai.Response {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "core", "spec", "testdata", stage+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return fakeopenai.Text(string(b))
}

type specView struct {
	ID           string
	Status       string
	CurrentStage *string `json:"current_stage"`
	NextStage    *string `json:"next_stage"`
	Inputs       []struct{ Kind, Title string }
	Artifacts    []struct {
		Stage   string
		Version int
		Content string
		Data    map[string]any
		Checks  []string
		Stale   bool
	}
	Error *ports.SpecError
}

// waitReady polls the session, as a client does, until it leaves generating.
func (st *stack) waitReady(token, id string) specView {
	st.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body, _ := st.call(token, "GET", "/pse/sessions/"+id, nil)
		var v specView
		if err := json.Unmarshal(body, &v); code != 200 || err != nil {
			st.t.Fatalf("GET session: %d %s", code, body)
		}
		if v.Status != "generating" {
			return v
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("session %s still generating after a minute", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noteSession creates a specification session named name from one note,
// as token, and returns its id.
func (st *stack) noteSession(token, name, note string) string {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/pse/sessions", map[string]any{
		"name":   name,
		"inputs": []map[string]string{{"kind": "note", "title": "Brief", "content": note}},
	})
	var v specView
	if err := json.Unmarshal(body, &v); code != 201 || err != nil {
		st.t.Fatalf("create session: %d %s", code, body)
	}
	return v.ID
}

func (st *stack) admin(email string) string {
	st.t.Helper()
	tok, err := st.id.IssueToken(st.t.Context(), identity.IssueTokenInput{Email: email, OrgName: "acme", Role: ports.RoleAdmin})
	if err != nil {
		st.t.Fatal(err)
	}
	return tok.Token
}

func TestSpecEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range stackCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			st := startStackOn(t, c, nil)
			admin, member, other := st.admin("lead@example.com"), st.token("dev@example.com"), st.token("eve@example.com")

			const rule = "Every requirement names the team that owns it."
			if code, body, _ := st.call(member, "POST", "/pse/standards", map[string]any{"title": "Owners", "body": rule, "applies_to": []string{"prd"}}); code != 403 {
				t.Fatalf("member writing a standard: %d %s", code, body)
			}
			code, body, _ := st.call(admin, "POST", "/pse/standards", map[string]any{"title": "Owners", "body": rule, "applies_to": []string{"prd"}})
			if code != 201 {
				t.Fatalf("create standard: %d %s", code, body)
			}

			// A standard is addressed by path, by the body's id (PUT) or by ?id= (DELETE).
			_, body, _ = st.call(admin, "POST", "/pse/standards", map[string]any{"title": "Tone", "body": "Plain words.", "applies_to": []string{"scope"}})
			var tone struct{ ID string }
			_ = json.Unmarshal(body, &tone)
			if code, body, _ := st.call(admin, "PUT", "/pse/standards", map[string]any{"id": tone.ID, "title": "Tone", "body": "Short words.", "applies_to": []string{"scope", "prd"}}); code != 200 || !bytes.Contains(body, []byte("Short words.")) {
				t.Fatalf("PUT by body id: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "GET", "/pse/standards/"+tone.ID, nil); code != 200 || !bytes.Contains(body, []byte(`"applies_to":["scope","prd"]`)) {
				t.Fatalf("GET by path: %d %s", code, body)
			}
			if code, body, _ := st.call(admin, "PUT", "/pse/standards/"+tone.ID, map[string]any{"title": "Tone", "body": "Shorter.", "applies_to": []string{"scope"}}); code != 200 || !bytes.Contains(body, []byte("Shorter.")) {
				t.Fatalf("PUT by path: %d %s", code, body)
			}
			if code, _, _ := st.call(admin, "DELETE", "/pse/standards?id="+tone.ID, nil); code != 204 {
				t.Fatalf("DELETE by ?id=: %d", code)
			}
			if code, body, _ := st.call(member, "GET", "/pse/standards", nil); code != 200 || bytes.Contains(body, []byte("Shorter.")) || !bytes.Contains(body, []byte("Owners")) {
				t.Fatalf("list after delete: %d %s", code, body)
			}

			code, body, _ = st.call(member, "POST", "/pse/sessions", map[string]any{
				"name": "Checkout revamp",
				"inputs": []map[string]string{
					{"kind": "document", "title": "Brief", "content": "We want one-click checkout for returning customers."},
					{"kind": "transcript", "title": "Kick-off call", "content": "Ana: guests must still be able to pay.\nBo: and refunds need to be visible."},
					{"kind": "note", "title": "Constraint", "content": "Must ship before the holiday freeze."},
				},
			})
			var v specView
			if err := json.Unmarshal(body, &v); code != 201 || err != nil || v.Status != "draft" || len(v.Inputs) != 3 || *v.NextStage != "scope" {
				t.Fatalf("create session: %d %s", code, body)
			}
			id := v.ID
			if code, _, _ := st.call(other, "GET", "/api/v1/pse/sessions/"+id, nil); code != 404 {
				t.Fatalf("another user's session: %d", code)
			}

			// Stories come one call per epic (2) and PRPs one per story (3);
			// each call keeps its own part of the sample.
			calls := map[string]int{"scope": 1, "prd": 1, "epics": 1, "stories": 2, "prps": 3}
			for _, stage := range []string{"scope", "prd", "epics", "stories", "prps"} {
				for range calls[stage] {
					st.model.Enqueue(stageOutput(t, stage))
				}
				code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil)
				if code != 202 || !bytes.Contains(body, []byte(`"stage":"`+stage+`"`)) || !bytes.Contains(body, []byte(`"status":"generating"`)) {
					t.Fatalf("generate %s: %d %s", stage, code, body)
				}
				v = st.waitReady(member, id)
				last := v.Artifacts[len(v.Artifacts)-1]
				if v.Status != "ready" || *v.CurrentStage != stage || last.Stage != stage || last.Version != 1 || len(last.Checks) != 0 {
					t.Fatalf("after %s: status %s, error %+v, last artifact %s v%d checks %v", stage, v.Status, v.Error, last.Stage, last.Version, last.Checks)
				}
				if !strings.HasPrefix(last.Content, "#") || len(last.Data) == 0 {
					t.Fatalf("%s artifact has no Markdown or data", stage)
				}
			}
			byStage := map[string]string{}
			for _, a := range v.Artifacts {
				byStage[a.Stage] = a.Content
			}
			for stage, ids := range map[string][]string{"prd": {"REQ-1", "NFR-1"}, "epics": {"EP-1", "EP-2"}, "stories": {"ST-1.1"}, "prps": {"PRP-1.1"}} {
				for _, id := range ids {
					if !strings.Contains(byStage[stage], id) {
						t.Errorf("%s Markdown does not name %s", stage, id)
					}
				}
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil); code != 409 || !bytes.Contains(body, []byte("pipeline_complete")) {
				t.Fatalf("generate after prps: %d %s", code, body)
			}

			// The standard reached the PRD prompt, and only that one.
			for _, req := range st.model.Requests() {
				if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
					continue
				}
				carries := strings.Contains(req.Messages[0].Content, rule)
				if isPRD := strings.Contains(req.ResponseFormat.JSONSchema.Name, "prd"); carries != isPRD {
					t.Errorf("%s prompt carries the prd standard: %v", req.ResponseFormat.JSONSchema.Name, carries)
				}
			}

			// Regenerating epics makes version 2 and marks stories and PRPs stale.
			st.model.Enqueue(stageOutput(t, "epics"))
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"stage": "epics"}); code != 202 {
				t.Fatalf("regenerate epics: %d %s", code, body)
			}
			v = st.waitReady(member, id)
			stale := map[string]bool{}
			var epicsV2 bool
			for _, a := range v.Artifacts {
				if a.Stale {
					stale[a.Stage] = true
				}
				epicsV2 = epicsV2 || (a.Stage == "epics" && a.Version == 2 && !a.Stale)
			}
			if !epicsV2 || !stale["stories"] || !stale["prps"] || stale["prd"] || stale["scope"] || *v.NextStage != "stories" {
				t.Fatalf("after regenerating epics: epics v2 %v, stale %v, next %v", epicsV2, stale, *v.NextStage)
			}
		})
	}
}

func TestSpecBadInput(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	tok := st.token("fay@example.com")
	_, body, _ := st.call(tok, "POST", "/pse/sessions", map[string]any{"name": "Empty"})
	var v specView
	_ = json.Unmarshal(body, &v)

	upload := func(filename, contentType string, content []byte) (int, []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("name", "Upload")
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{`form-data; name="file"; filename="` + filename + `"`}
		h["Content-Type"] = []string{contentType}
		part, _ := mw.CreatePart(h)
		_, _ = part.Write(content)
		_ = mw.Close()
		req, _ := http.NewRequest("POST", st.base+"/pse/sessions", &buf)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		st.conform(t, resp, out.Bytes())
		return resp.StatusCode, out.Bytes()
	}
	if code, body := upload("notes.md", "text/markdown", []byte("# Notes\nShip it.")); code != 201 || !bytes.Contains(body, []byte(`"title":"notes"`)) {
		t.Fatalf("markdown upload: %d %s", code, body)
	}
	if code, body := upload("spec.pdf", "application/pdf", []byte("%PDF-1.7\n...")); code != 422 || !bytes.Contains(body, []byte("not a readable PDF")) {
		t.Fatalf("PDF upload: %d %s", code, body)
	}
	if code, body := upload("picture.png", "image/png", []byte("\x89PNG\r\n")); code != 415 {
		t.Fatalf("PNG upload: %d %s", code, body)
	}
	if code, body := upload("big.txt", "text/plain", bytes.Repeat([]byte("a"), 1<<20+1)); code != 413 {
		t.Fatalf("oversize input: %d %.200s", code, body)
	}

	// A model that answers with invalid JSON twice fails the session with a
	// readable error and nothing stored; generate then works again.
	_, body, _ = st.call(tok, "POST", "/pse/sessions", map[string]any{"name": "Flaky",
		"inputs": []map[string]string{{"kind": "note", "title": "n", "content": "one-click checkout"}}})
	var flaky specView
	_ = json.Unmarshal(body, &flaky)
	st.model.Enqueue(fakeopenai.Text("here is your scope!"), fakeopenai.Text(`{"title":`))
	if code, body, _ := st.call(tok, "POST", "/pse/sessions/"+flaky.ID+"/generate", nil); code != 202 {
		t.Fatalf("generate: %d %s", code, body)
	}
	if got := st.waitReady(tok, flaky.ID); got.Status != "failed" || got.Error == nil || got.Error.Code != "invalid_output" || len(got.Artifacts) != 0 {
		t.Fatalf("after invalid output twice: %+v", got)
	}
	st.model.Enqueue(stageOutput(t, "scope"))
	st.call(tok, "POST", "/pse/sessions/"+flaky.ID+"/generate", nil)
	if got := st.waitReady(tok, flaky.ID); got.Status != "ready" || got.Error != nil || len(got.Artifacts) != 1 {
		t.Fatalf("generate after a failure: %+v", got)
	}

	tests := []struct {
		name         string
		method, path string
		body         any
		status       int
		code         string
	}{
		{"no name", "POST", "/pse/sessions", map[string]any{}, 400, "malformed"},
		{"bad kind", "POST", "/pse/sessions", map[string]any{"name": "x", "inputs": []map[string]string{{"kind": "video", "title": "t", "content": "c"}}}, 422, "invalid"},
		{"generate with no inputs", "POST", "/pse/sessions/" + v.ID + "/generate", nil, 422, "no_inputs"},
		{"unknown stage", "POST", "/pse/sessions/" + v.ID + "/generate", map[string]string{"stage": "design"}, 422, "invalid"},
		{"unknown session", "GET", "/pse/sessions/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", nil, 404, "not_found"},
		{"delete standard without id", "DELETE", "/pse/standards", nil, 400, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := st.call(tok, tt.method, tt.path, tt.body)
			if code != tt.status || !bytes.Contains(body, []byte(tt.code)) {
				t.Fatalf("%s %s = %d %s, want %d %s", tt.method, tt.path, code, body, tt.status, tt.code)
			}
		})
	}
}
