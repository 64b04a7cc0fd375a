package app_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestSpecRenameDelete renames and deletes specification sessions through
// the API, on both databases: hostile names are 422, another's session is
// 404, a generating one is not deleted (409), a deleted one is gone with
// its inputs and audited; and inputs sent without a title get one from
// their content.
func TestSpecRenameDelete(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead, member, other := st.admin("lead@example.com"), st.token("dev@example.com"), st.token("eve@example.com")

			// A note's title is optional: it comes from the first line with text.
			code, body, _ := st.call(member, "POST", "/pse/sessions", map[string]any{
				"name":   "Draft",
				"inputs": []map[string]string{{"kind": "note", "content": "\n## Kick-off notes\nWe met on Monday."}},
			})
			var v specView
			if err := json.Unmarshal(body, &v); code != 201 || err != nil || len(v.Inputs) != 1 || v.Inputs[0].Title != "Kick-off notes" {
				t.Fatalf("create with an untitled note: %d %s", code, body)
			}
			id := v.ID
			code, body, _ = st.call(member, "POST", "/api/v1/pse/sessions/"+id+"/inputs", map[string]string{"kind": "note", "title": "", "content": "#"})
			if code != 201 || !bytes.Contains(body, []byte(`"title":"Untitled note"`)) {
				t.Fatalf("add a note without text for a title: %d %s", code, body)
			}

			// Rename, by either path; hostile names are 422 naming name.
			for _, path := range []string{"/pse/sessions/", "/api/v1/pse/sessions/"} {
				code, body, _ = st.call(member, "PATCH", path+id, map[string]string{"name": "  Checkout revamp "})
				if err := json.Unmarshal(body, &v); code != 200 || err != nil || v.ID != id || len(v.Inputs) != 2 ||
					!bytes.Contains(body, []byte(`"name":"Checkout revamp"`)) {
					t.Fatalf("PATCH %s: %d %s", path, code, body)
				}
			}
			for _, bad := range []any{
				map[string]string{"name": "a\x00b"}, map[string]string{"name": "line\nbreak"}, map[string]string{"name": "\x1b[2J"},
				map[string]string{"name": "   "}, map[string]any{"name": string(bytes.Repeat([]byte("n"), 201))},
			} {
				code, body, _ = st.call(member, "PATCH", "/pse/sessions/"+id, bad)
				if code != 422 || !bytes.Contains(body, []byte(`"field":"name"`)) {
					t.Fatalf("PATCH with %q: %d %s", bad, code, body)
				}
			}
			// A missing name is malformed, as on create.
			if code, body, _ = st.call(member, "PATCH", "/pse/sessions/"+id, map[string]any{}); code != 400 || !bytes.Contains(body, []byte(`"field":"name"`)) {
				t.Fatalf("PATCH without a name: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "POST", "/pse/sessions", map[string]any{"name": "tab\there"}); code != 422 || !bytes.Contains(body, []byte(`"field":"name"`)) {
				t.Fatalf("create with a control character in the name: %d %s", code, body)
			}
			if code, body, _ = st.call(other, "PATCH", "/pse/sessions/"+id, map[string]string{"name": "Mine"}); code != 404 {
				t.Fatalf("PATCH another's session: %d %s", code, body)
			}
			if code, body, _ = st.call(other, "DELETE", "/pse/sessions/"+id, nil); code != 404 {
				t.Fatalf("DELETE another's session: %d %s", code, body)
			}

			// A generating session is not deleted: the model's answer is held
			// back until the refused delete, and the session is deleted once
			// its generation ended.
			scope, release := stageOutput(t, "scope"), make(chan struct{})
			st.model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
				<-release
				return scope
			})
			if code, body, _ = st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil); code != 202 {
				close(release)
				t.Fatalf("generate: %d %s", code, body)
			}
			code, body, _ = st.call(member, "DELETE", "/pse/sessions/"+id, nil)
			close(release)
			if code != 409 || !bytes.Contains(body, []byte("generation_running")) {
				t.Fatalf("DELETE while generating: %d %s", code, body)
			}
			if v = st.waitReady(member, id); v.Status != "ready" || len(v.Artifacts) != 1 {
				t.Fatalf("after the generation: %+v", v)
			}

			// Delete a session with inputs; the other one stays.
			doomed := st.noteSession(member, "Doomed", "Throw this away.")
			if code, body, _ = st.call(member, "DELETE", "/api/v1/pse/sessions/"+doomed, nil); code != 204 || len(body) != 0 {
				t.Fatalf("DELETE: %d %s", code, body)
			}
			for _, call := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/pse/sessions/" + doomed, nil}, {"DELETE", "/pse/sessions/" + doomed, nil},
				{"PATCH", "/pse/sessions/" + doomed, map[string]string{"name": "x"}},
				{"POST", "/pse/sessions/" + doomed + "/inputs", map[string]string{"kind": "note", "content": "x"}},
			} {
				if code, body, _ = st.call(member, call.method, call.path, call.body); code != 404 {
					t.Fatalf("%s %s after the delete: %d %s", call.method, call.path, code, body)
				}
			}
			code, body, _ = st.call(member, "GET", "/pse/sessions", nil)
			if code != 200 || bytes.Contains(body, []byte(doomed)) || !bytes.Contains(body, []byte(id)) {
				t.Fatalf("list after the delete: %d %s", code, body)
			}
			// The session that generated, with its artifact, goes too.
			if code, body, _ = st.call(member, "DELETE", "/pse/sessions/"+id, nil); code != 204 {
				t.Fatalf("DELETE once the generation ended: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "GET", "/pse/sessions/"+id, nil); code != 404 {
				t.Fatalf("GET after the delete: %d %s", code, body)
			}

			code, body, _ = st.call(lead, "GET", "/api/v1/audit", nil)
			var audit struct {
				Items []struct {
					Action, Resource string
					Arguments        map[string]string
				}
			}
			if err := json.Unmarshal(body, &audit); code != 200 || err != nil {
				t.Fatalf("audit: %d %s", code, body)
			}
			var got []string
			for _, e := range audit.Items {
				got = append(got, e.Action+" "+e.Resource+" "+e.Arguments["name"])
			}
			want := []string{"spec.delete spec_session/" + id + " Checkout revamp", "spec.delete spec_session/" + doomed + " Doomed",
				"spec.rename spec_session/" + id + " Checkout revamp", "spec.rename spec_session/" + id + " Checkout revamp"}
			if !slices.Equal(got, want) {
				t.Fatalf("audit %q, want %q", got, want)
			}
		})
	}
}
