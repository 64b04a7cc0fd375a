package app_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/spec"
)

// download GETs path and returns the status, the response's head and the
// body, checked against the OpenAPI document as call's are.
func (st *stack) download(token, path string, header ...string) (int, http.Header, []byte) {
	st.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, st.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	code, h, raw := st.send(req)
	return code, h, raw
}

// zipFiles returns an archive's entry names, in order, and their contents.
func zipFiles(t *testing.T, b []byte) ([]string, map[string]string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip archive (%v): %.200q", err, b)
	}
	var names []string
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
		files[f.Name] = string(body)
	}
	return names, files
}

var exportDisposition = regexp.MustCompile(`^attachment; filename="spec-[0-9a-f]{8}\.(zip|md)"$`)

// TestSpecExportEndToEnd generates a session through every stage with the
// fake model, regenerates the epics (so stories and PRPs are stale), and
// downloads it as a zip archive and as Markdown; on both databases.
func TestSpecExportEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			member, other := st.token("dev@example.com"), st.token("eve@example.com")
			id := st.noteSession(member, "Checkout revamp", "One-click checkout for returning customers.")
			for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps", "epics"} {
				st.model.Enqueue(stageOutput(t, stage))
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "prps"}); code != 202 {
				t.Fatalf("generate through prps: %d %s", code, body)
			}
			if v := st.waitReady(member, id); v.Status != "ready" || v.NextStage != nil {
				t.Fatalf("after the chain: %+v", v)
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"stage": "epics"}); code != 202 {
				t.Fatalf("regenerate epics: %d %s", code, body)
			}
			if v := st.waitReady(member, id); v.Status != "ready" {
				t.Fatalf("after regenerating epics: %+v", v)
			}

			code, head, archive := st.download(member, "/pse/sessions/"+id+"/export")
			if code != 200 || head.Get("Content-Type") != "application/zip" {
				t.Fatalf("export: %d %s %.300s", code, head.Get("Content-Type"), archive)
			}
			if cd := head.Get("Content-Disposition"); !exportDisposition.MatchString(cd) || !strings.Contains(cd, id[len(id)-8:]+".zip") {
				t.Errorf("Content-Disposition %q", cd)
			}
			names, files := zipFiles(t, archive)
			want := []string{"README.md", "01-scope.md", "02-prd.md", "03-epics.md", "04-stories.md", "05-prps.md",
				"data/scope.json", "data/prd.json", "data/epics.json", "data/stories.json", "data/prps.json",
				"traceability.md", "traceability.csv"}
			if !slices.Equal(names, want) {
				t.Fatalf("entries %v, want %v", names, want)
			}
			for name, stale := range map[string]bool{"01-scope.md": false, "02-prd.md": false, "03-epics.md": false, "04-stories.md": true, "05-prps.md": true} {
				if strings.Contains(files[name], spec.StaleNote) != stale {
					t.Errorf("%s stale mark: want %v:\n%.400s", name, stale, files[name])
				}
			}
			if !strings.Contains(files["03-epics.md"], "version 2") || !strings.Contains(files["03-epics.md"], "EP-1") {
				t.Errorf("03-epics.md is not the current epics:\n%.400s", files["03-epics.md"])
			}
			for _, s := range []string{"# Checkout revamp", "| 3 | Epics | current | 2 |", "| 4 | Stories | **stale** — regenerate | 1 |", "| 5 | PRPs | **stale** — regenerate | 1 |"} {
				if !strings.Contains(files["README.md"], s) {
					t.Errorf("README.md lacks %q:\n%s", s, files["README.md"])
				}
			}
			var data map[string]any
			if err := json.Unmarshal([]byte(files["data/prd.json"]), &data); err != nil || data["functional_requirements"] == nil {
				t.Errorf("data/prd.json: %v", err)
			}
			recs, err := csv.NewReader(strings.NewReader(files["traceability.csv"])).ReadAll()
			if err != nil || len(recs) != 4 {
				t.Fatalf("traceability.csv (%v):\n%s", err, files["traceability.csv"])
			}
			for i, chain := range []string{"REQ-1 EP-1 ST-1.1 PRP-1.1 complete", "REQ-2 EP-2 ST-2.1 PRP-2.1 complete", "REQ-3 EP-2 ST-2.2 PRP-2.2 complete"} {
				r := recs[i+1]
				if got := strings.Join([]string{r[0], r[2], r[4], r[6], r[8]}, " "); got != chain {
					t.Errorf("traceability row %d: %q, want %q", i+1, got, chain)
				}
			}

			// The same state exports the same bytes; its ETag answers 304.
			etag := head.Get("ETag")
			code, again, same := st.download(member, "/api/v1/pse/sessions/"+id+"/export?format=zip")
			if code != 200 || !bytes.Equal(same, archive) || again.Get("ETag") != etag {
				t.Errorf("a second export: %d, identical %v, ETag %q then %q", code, bytes.Equal(same, archive), etag, again.Get("ETag"))
			}
			if code, _, body := st.download(member, "/pse/sessions/"+id+"/export", "If-None-Match", etag); code != 304 || len(body) != 0 {
				t.Errorf("If-None-Match with the ETag: %d, %d bytes", code, len(body))
			}

			code, head, doc := st.download(member, "/pse/sessions/"+id+"/export?format=md")
			if code != 200 || head.Get("Content-Type") != "text/markdown; charset=utf-8" || !exportDisposition.MatchString(head.Get("Content-Disposition")) ||
				!strings.HasSuffix(head.Get("Content-Disposition"), `.md"`) || head.Get("ETag") == etag {
				t.Fatalf("md export: %d %v", code, head)
			}
			at := 0
			for _, s := range []string{"# Checkout revamp", "> Scope · version 1", "> Epics · version 2", "> Stories · version 1", spec.StaleNote, "# Traceability", "| REQ-1: "} {
				i := strings.Index(string(doc[at:]), s)
				if i < 0 {
					t.Fatalf("md export: %q missing or out of order:\n%s", s, doc)
				}
				at += i + len(s)
			}

			if code, _, body := st.download(member, "/pse/sessions/"+id+"/export?format=pdf"); code != 422 || !bytes.Contains(body, []byte(`"field":"format"`)) {
				t.Errorf("an unknown format: %d %s", code, body)
			}
			if code, _, body := st.download(other, "/pse/sessions/"+id+"/export"); code != 404 {
				t.Errorf("another user's session: %d %s", code, body)
			}
		})
	}
}

// TestSpecExportEmptyAndHostile: a session without any stage exports its
// README alone, and nothing of a session's name reaches a file name or a
// header.
func TestSpecExportEmptyAndHostile(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	tok := st.token("fay@example.com")
	for _, name := range []string{"bad\x00name", "bad\x1bname", "bad\r\nX-Injected: 1"} {
		if code, body, _ := st.call(tok, "POST", "/pse/sessions", map[string]any{"name": name}); code != 422 || !bytes.Contains(body, []byte(`"name"`)) {
			t.Errorf("a name holding a control character: %d %s", code, body)
		}
	}
	// Line breaks are refused in names; what is left of a header
	// injection must still reach no file name and no header.
	hostile := "../../etc/passwd\"; filename=evil.exe X-Injected: 1 <script>|"
	code, body, _ := st.call(tok, "POST", "/pse/sessions", map[string]any{"name": hostile})
	var v specView
	if err := json.Unmarshal(body, &v); code != 201 || err != nil {
		t.Fatalf("create session: %d %s", code, body)
	}
	for _, format := range []string{"zip", "md"} {
		code, head, body := st.download(tok, "/pse/sessions/"+v.ID+"/export?format="+format)
		if code != 200 || !exportDisposition.MatchString(head.Get("Content-Disposition")) || head.Get("X-Injected") != "" {
			t.Fatalf("%s export: %d %v", format, code, head)
		}
		readme := string(body)
		if format == "zip" {
			names, files := zipFiles(t, body)
			if !slices.Equal(names, []string{"README.md"}) {
				t.Fatalf("entries of an empty session: %v", names)
			}
			readme = files["README.md"]
		}
		first, _, _ := strings.Cut(readme, "\n")
		if first != `# ../../etc/passwd"; filename=evil.exe X-Injected: 1 <script>|` || !strings.Contains(readme, "No stage is generated yet.") {
			t.Errorf("%s index:\n%s", format, readme)
		}
	}
}
