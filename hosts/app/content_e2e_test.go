package app_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

type contentView struct {
	ID      string
	BriefID string `json:"brief_id"`
	Title   string
	Body    string
	Status  string
	Checks  []ports.ContentCheck
	Error   *ports.ContentError
	Version int
}

// waitDrafted polls a content item, as a client does, until it leaves
// generating.
func (st *stack) waitDrafted(token, id string) contentView {
	st.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body, _ := st.call(token, "GET", "/content/"+id, nil)
		var v contentView
		if err := json.Unmarshal(body, &v); code != 200 || err != nil {
			st.t.Fatalf("GET content: %d %s", code, body)
		}
		if v.Status != "generating" {
			return v
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("content %s still generating after 20s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// generate asks for one draft of the brief and returns the new item's id.
func (st *stack) generate(token, briefID string) string {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/content/generate", map[string]any{"brief_id": briefID})
	var out struct{ Items []contentView }
	if err := json.Unmarshal(body, &out); code != 202 || err != nil || len(out.Items) != 1 || out.Items[0].Status != "generating" {
		st.t.Fatalf("generate: %d %s", code, body)
	}
	return out.Items[0].ID
}

// update PUTs a change to a content item with the version in If-Match.
func (st *stack) update(token, id string, version int, change map[string]any) (int, contentView, []byte) {
	st.t.Helper()
	code, body, _ := st.call(token, "PUT", "/content/"+id, change, "If-Match", strconv.Quote(strconv.Itoa(version)))
	var v contentView
	_ = json.Unmarshal(body, &v)
	return code, v, body
}

func hasCheck(checks []ports.ContentCheck, kind, term string) bool {
	for _, c := range checks {
		if c.Kind == kind && c.Term == term {
			return true
		}
	}
	return false
}

func TestContentEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			member := st.token("writer@example.com")
			outsider, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "eve@globex.example", OrgName: "globex"})
			if err != nil {
				t.Fatal(err)
			}

			// Brand: defaults first, then a versioned replacement.
			code, body, _ := st.call(member, "GET", "/content/brands/web", nil)
			var brand struct {
				Version     int
				BannedWords []string `json:"banned_words"`
			}
			if err := json.Unmarshal(body, &brand); code != 200 || err != nil || brand.Version != 0 {
				t.Fatalf("default brand: %d %s", code, body)
			}
			settings := map[string]any{"name": "Acme", "voice": "Warm and direct.", "tone": []string{"friendly"},
				"banned_words": []string{"cheap"}, "preferred_terms": map[string]string{"utilize": "use"}}
			code, body, _ = st.call(member, "PUT", "/content/brands/web", settings, "If-Match", `"0"`)
			if err := json.Unmarshal(body, &brand); code != 200 || err != nil || brand.Version != 1 || brand.BannedWords[0] != "cheap" {
				t.Fatalf("put brand: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "PUT", "/content/brands/web", settings, "If-Match", `"0"`); code != 412 {
				t.Fatalf("put brand with a stale version: %d %s", code, body)
			}

			// Briefs: bad lengths are 422; another org cannot see one.
			bad := map[string]any{"project_id": "web", "title": "Spring", "length": map[string]int{"min_words": 300, "max_words": 100}}
			if code, body, _ := st.call(member, "POST", "/content/briefs", bad); code != 422 {
				t.Fatalf("brief with min > max: %d %s", code, body)
			}
			code, body, _ = st.call(member, "POST", "/content/briefs", map[string]any{
				"project_id": "web", "title": "Spring sale", "goal": "Announce the spring plans.", "channel": "blog",
				"format": "blog_post", "keywords": []string{"plans"}, "length": map[string]int{"min_words": 5, "max_words": 200},
			})
			var brief struct{ ID string }
			if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
				t.Fatalf("create brief: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "GET", "/content/briefs?project_id=web", nil); code != 200 || !json.Valid(body) || !containsAll(body, brief.ID) {
				t.Fatalf("list briefs: %d %s", code, body)
			}
			if code, _, _ := st.call(outsider.Token, "GET", "/content/briefs/"+brief.ID, nil); code != 404 {
				t.Fatalf("another org's brief: %d", code)
			}
			if code, _, _ := st.call(outsider.Token, "POST", "/content/generate", map[string]any{"brief_id": brief.ID}); code != 404 {
				t.Fatalf("generating from another org's brief: %d", code)
			}

			// Generate: the worker drafts it, gives the banned word one
			// revision pass (which changes nothing here) and flags it.
			cheap := `{"title":"Spring plans are here","body":"Our cheap plans help every team ship faster this spring."}`
			st.model.Enqueue(fakeopenai.Text(cheap), fakeopenai.Text(cheap))
			id := st.generate(member, brief.ID)
			v := st.waitDrafted(member, id)
			if v.Status != "draft" || v.Title != "Spring plans are here" || !hasCheck(v.Checks, "banned_word", "cheap") {
				t.Fatalf("drafted: %+v", v)
			}

			// Edits need the current version; a stale one changes nothing.
			code, edited, body := st.update(member, id, v.Version, map[string]any{"body": "Our fair plans help every team ship faster this spring."})
			if code != 200 || edited.Version != v.Version+1 || hasCheck(edited.Checks, "banned_word", "cheap") {
				t.Fatalf("edit: %d %s", code, body)
			}
			if code, _, body := st.update(member, id, v.Version, map[string]any{"body": "Lost edit."}); code != 412 {
				t.Fatalf("stale edit: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "PUT", "/content/"+id, map[string]any{"body": "No version."}); code != 428 {
				t.Fatalf("edit without a version: %d %s", code, body)
			}
			if after := st.waitDrafted(member, id); after.Body != edited.Body || after.Version != edited.Version {
				t.Fatalf("after the stale edit: %+v", after)
			}

			// Review and approval; a skipped step is 409; an edit invalidates approval.
			if code, _, body := st.update(member, id, edited.Version, map[string]any{"status": "published"}); code != 409 {
				t.Fatalf("draft → published: %d %s", code, body)
			}
			code, reviewed, body := st.update(member, id, edited.Version, map[string]any{"status": "in_review"})
			if code != 200 || reviewed.Status != "in_review" {
				t.Fatalf("to review: %d %s", code, body)
			}
			code, approved, body := st.update(member, id, reviewed.Version, map[string]any{"status": "approved"})
			if code != 200 || approved.Status != "approved" {
				t.Fatalf("approve: %d %s", code, body)
			}
			code, reopened, body := st.update(member, id, approved.Version, map[string]any{"title": "Spring plans, now live"})
			if code != 200 || reopened.Status != "draft" {
				t.Fatalf("edit of an approved item: %d %s", code, body)
			}

			// A model failure fails the item with its reason; generating again works.
			st.model.Enqueue(fakeopenai.APIError(400, "invalid_request_error", "invalid_prompt", "the prompt was rejected"))
			failedID := st.generate(member, brief.ID)
			if f := st.waitDrafted(member, failedID); f.Status != "failed" || f.Error == nil || f.Error.Message == "" {
				t.Fatalf("after a model failure: %+v", f)
			}
			st.model.Enqueue(fakeopenai.Text(`{"title":"Spring, again","body":"Plans that help every team ship faster this spring."}`))
			if again := st.waitDrafted(member, st.generate(member, brief.ID)); again.Status != "draft" {
				t.Fatalf("generate again: %+v", again)
			}

			// Lists filter by status; the /api/v1 alias serves the same.
			if code, body, _ := st.call(member, "GET", "/api/v1/content?project_id=web&status=failed", nil); code != 200 || !containsAll(body, failedID) || containsAll(body, id) {
				t.Fatalf("list failed items: %d %s", code, body)
			}

			// Delete: another org's is 404; the owner's is 204, then gone.
			if code, _, _ := st.call(outsider.Token, "DELETE", "/content/"+id, nil); code != 404 {
				t.Fatalf("another org deleting: %d", code)
			}
			if code, body, _ := st.call(member, "DELETE", "/content/"+id, nil); code != 204 {
				t.Fatalf("delete: %d %s", code, body)
			}
			if code, _, _ := st.call(member, "GET", "/content/"+id, nil); code != 404 {
				t.Fatalf("deleted item: %d", code)
			}
			if code, _, _ := st.call(member, "POST", "/content/"+failedID, nil); code != 405 {
				t.Fatalf("POST to an item: %d", code)
			}
		})
	}
}

// containsAll reports whether body holds every one of subs.
func containsAll(body []byte, subs ...string) bool {
	for _, s := range subs {
		if !bytes.Contains(body, []byte(s)) {
			return false
		}
	}
	return true
}
