package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

type projectView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	CreatedBy   string `json:"created_by"`
	Version     int    `json:"version"`
}

// projects lists the caller's org's content projects, every page.
func (st *stack) projects(token string) []projectView {
	st.t.Helper()
	var all []projectView
	cursor := ""
	for {
		code, body, _ := st.call(token, "GET", "/api/v1/content/projects?limit=2&cursor="+cursor, nil)
		var page struct {
			Items      []projectView `json:"items"`
			NextCursor *string       `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); code != 200 || err != nil {
			st.t.Fatalf("list projects: %d %s", code, body)
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all
		}
		cursor = *page.NextCursor
	}
}

// TestContentProjects creates, lists, reads and renames named content
// projects through the API on both databases: hostile names are 422, a
// duplicate name (ignoring case) 409 name_taken, another org's project
// 404; of concurrent creates of one name exactly one wins; a project id
// used without a record (a brand, a brief) gets one named after it and
// keeps working; writes are audited.
func TestContentProjects(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead, member := st.admin("lead@example.com"), st.token("dev@example.com")
			stranger, _ := st.cloudUser("eve@example.com", "globex", "")

			code, body, _ := st.call(member, "POST", "/content/projects", map[string]string{"name": "  Spring launch ", "description": "Posts for\nthe launch"})
			var p projectView
			if err := json.Unmarshal(body, &p); code != 201 || err != nil || p.Name != "Spring launch" || p.Description != "Posts for\nthe launch" || p.Version != 1 || p.ID == "" {
				t.Fatalf("create: %d %s", code, body)
			}
			for _, name := range []string{"spring LAUNCH", "Spring  launch"} {
				code, body, _ = st.call(member, "POST", "/api/v1/content/projects", map[string]string{"name": name})
				if code != 409 || !bytes.Contains(body, []byte("name_taken")) {
					t.Fatalf("create a duplicate %q: %d %s", name, code, body)
				}
			}
			for _, bad := range []any{
				map[string]string{"name": "a\x00b"}, map[string]string{"name": "line\nbreak"}, map[string]string{"name": "\x1b[2J"},
				map[string]string{"name": "   "}, map[string]string{"name": strings.Repeat("n", 101)},
				map[string]string{"name": "ok", "description": "bell\x07"}, map[string]string{"name": "rtl\u202eevil"},
			} {
				code, body, _ = st.call(member, "POST", "/content/projects", bad)
				if code != 422 {
					t.Fatalf("create with %q: %d %s", bad, code, body)
				}
			}
			if code, body, _ = st.call(member, "POST", "/content/projects", map[string]string{"description": "no name"}); code != 400 {
				t.Fatalf("create without a name: %d %s", code, body)
			}

			// Read, rename (conditional or not), and the errors of a rename.
			code, body, _ = st.call(member, "GET", "/content/projects/"+p.ID, nil)
			if code != 200 || !bytes.Contains(body, []byte(`"name":"Spring launch"`)) {
				t.Fatalf("get: %d %s", code, body)
			}
			code, body, _ = st.call(member, "PATCH", "/api/v1/content/projects/"+p.ID, map[string]string{"name": "Summer launch"}, "If-Match", `"1"`)
			if err := json.Unmarshal(body, &p); code != 200 || err != nil || p.Name != "Summer launch" || p.Version != 2 {
				t.Fatalf("rename: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "PATCH", "/content/projects/"+p.ID, map[string]string{"name": "Stale"}, "If-Match", `"1"`); code != 412 {
				t.Fatalf("rename from a stale version: %d %s", code, body)
			}
			postProject(t, st, member, "Autumn")
			if code, body, _ = st.call(member, "PATCH", "/content/projects/"+p.ID, map[string]string{"name": "AUTUMN"}); code != 409 || !bytes.Contains(body, []byte("name_taken")) {
				t.Fatalf("rename to a taken name: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "PATCH", "/content/projects/"+p.ID, map[string]string{"name": "tab\there"}); code != 422 {
				t.Fatalf("rename to a name with a tab: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "PATCH", "/content/projects/"+p.ID, map[string]any{}); code != 422 {
				t.Fatalf("rename with nothing: %d %s", code, body)
			}
			code, body, _ = st.call(member, "PATCH", "/content/projects/"+p.ID, map[string]string{"description": ""})
			if err := json.Unmarshal(body, &p); code != 200 || err != nil || p.Name != "Summer launch" || p.Description != "" || p.Version != 3 {
				t.Fatalf("clear the description: %d %s", code, body)
			}
			for _, call := range []struct{ method, path string }{
				{"GET", "/content/projects/" + p.ID}, {"PATCH", "/content/projects/" + p.ID},
				{"GET", "/content/projects/no-such-project"}, {"GET", "/content/projects/bad%20id"},
			} {
				tok := stranger
				if strings.Contains(call.path, "no-such") || strings.Contains(call.path, "bad") {
					tok = member
				}
				if code, body, _ = st.call(tok, call.method, call.path, map[string]string{"name": "Mine"}); code != 404 {
					t.Fatalf("%s %s: %d %s", call.method, call.path, code, body)
				}
			}
			if code, body, _ = st.call(member, "DELETE", "/content/projects/"+p.ID, nil); code != 405 {
				t.Fatalf("DELETE a project: %d %s", code, body)
			}

			// Project ids used without a record keep working and get one.
			code, body, _ = st.call(member, "PUT", "/content/brands/legacy-blog", map[string]any{"name": "Legacy"})
			if code != 200 {
				t.Fatalf("put a brand of an id without a project: %d %s", code, body)
			}
			code, body, _ = st.call(member, "POST", "/content/briefs", map[string]any{"project_id": "autumn", "title": "A brief"})
			if code != 201 {
				t.Fatalf("brief of an id that is another project's name: %d %s", code, body)
			}
			if code, body, _ = st.call(member, "GET", "/content/brands/legacy-blog", nil); code != 200 || !bytes.Contains(body, []byte(`"name":"Legacy"`)) {
				t.Fatalf("get the brand: %d %s", code, body)
			}
			var names []string
			for _, v := range st.projects(member) {
				names = append(names, v.Name)
				if v.ID == "autumn" && !strings.HasPrefix(v.Name, "autumn (") {
					t.Errorf("the project of id autumn is named %q", v.Name)
				}
			}
			if len(names) != 4 || names[0] != "Autumn" || !strings.HasPrefix(names[1], "autumn (") || names[2] != "legacy-blog" || names[3] != "Summer launch" {
				t.Fatalf("projects: %q", names)
			}
			if got := st.projects(stranger); len(got) != 0 {
				t.Fatalf("another org's projects: %+v", got)
			}

			// Of concurrent creates of one name exactly one wins.
			const n = 8
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					codes[i], _, _ = st.call(member, "POST", "/content/projects", map[string]string{"name": fmt.Sprintf("Race%s", strings.Repeat(" ", i%2+1))})
				})
			}
			wg.Wait()
			slices.Sort(codes)
			if codes[0] != 201 || codes[1] != 409 || codes[n-1] != 409 {
				t.Fatalf("concurrent creates of one name: %v, want one 201 and the rest 409", codes)
			}

			code, body, _ = st.call(lead, "GET", "/api/v1/audit", nil)
			var audit struct {
				Items []struct {
					Action, Resource, Outcome string
					Arguments                 map[string]any
				}
			}
			if err := json.Unmarshal(body, &audit); code != 200 || err != nil {
				t.Fatalf("audit: %d %s", code, body)
			}
			var renames []string
			created := 0
			for _, e := range audit.Items {
				switch e.Action {
				case "content.update_project":
					if e.Outcome == "ok" {
						renames = append(renames, fmt.Sprint(e.Arguments["from"], " → ", e.Arguments["name"]))
					}
				case "content.create_project":
					if e.Outcome == "ok" {
						created++
					}
				}
			}
			if want := []string{"Summer launch → Summer launch", "Spring launch → Summer launch"}; !slices.Equal(renames, want) {
				t.Errorf("audited renames %q, want %q", renames, want)
			}
			if created != 3 {
				t.Errorf("audited creates: %d, want 3", created)
			}
		})
	}
}

func postProject(t *testing.T, st *stack, token, name string) projectView {
	t.Helper()
	code, body, _ := st.call(token, "POST", "/content/projects", map[string]string{"name": name})
	var p projectView
	if err := json.Unmarshal(body, &p); code != 201 || err != nil {
		t.Fatalf("create project %q: %d %s", name, code, body)
	}
	return p
}
