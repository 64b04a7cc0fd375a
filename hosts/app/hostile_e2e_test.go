package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// hostileLiterals are JSON string literals of each class of hostile text a
// caller may send (docs/api.md, "Conventions"): each must be refused with a 4xx
// naming the field, on both databases alike.
var hostileLiterals = []struct{ class, literal string }{
	{"NUL", `"before\u0000after"`},
	{"bell", `"ring\u0007"`},
	{"escape sequence", `"\u001b[2Jcleared"`},
	{"unit separator", `"a\u001fb"`},
	{"lone high surrogate", `"x\ud800y"`},
	{"lone low surrogate", `"\udc00"`},
	{"byte-order mark", `"\ufeffname"`},
	{"bidi override", `"invoice\u202egnp.exe"`},
	{"bidi isolate", `"\u2067isolated\u2069"`},
}

// hostileBytes are the same classes as raw text, for multipart fields, path
// segments and query parameters (a lone surrogate as the bytes CESU-8 gives
// it, which is not UTF-8), plus invalid UTF-8.
var hostileBytes = []struct{ class, text string }{
	{"NUL", "before\x00after"},
	{"bell", "ring\x07"},
	{"lone surrogate", "x\xed\xa0\x80y"},
	{"invalid UTF-8", "caf\xe9"},
	{"byte-order mark", "\ufeffname"},
	{"bidi override", "invoice\u202egnp.exe"},
}

// TestHostileInputEverywhere sends every write operation of the OpenAPI
// document (so an operation added later is covered by default) a body built
// from its schema, with each string field in turn holding each hostile
// class; each path and query parameter too. Nothing may answer 5xx; a JSON
// string field of the caller's is refused naming the field; afterwards every
// list still reads back. Then text devpilot did not get from the caller (a
// model's reply and tool arguments, a webhook's commit messages) is stored
// cleaned, never refused.
func TestHostileInputEverywhere(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := startSandboxOn(t, d)
			hc := &hostileClient{t: t, base: h.base, token: h.sb.Token()}
			doc := hc.openapi()
			fixtures := hc.fixtures()

			deadline := time.Now().Add(3 * time.Minute)
			ops := 0
			for _, path := range sortedPaths(doc) {
				item := doc.Paths.Value(path)
				for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
					op := item.GetOperation(method)
					if op == nil {
						continue
					}
					if time.Now().After(deadline) {
						t.Fatalf("out of time after %d operations", ops)
					}
					ops++
					hc.tryOperation(method, path, item, op, fixtures)
				}
			}
			if ops < 25 {
				t.Fatalf("only %d write operations in the document", ops)
			}

			// What was accepted reads back: every list answers 200.
			for _, path := range sortedPaths(doc) {
				op := doc.Paths.Value(path).Get
				if op == nil || strings.Contains(path, "{") || path == "/metrics" || strings.Contains(path, "/scm-oauth/") {
					continue
				}
				status, body := hc.send(http.MethodGet, path+hc.requiredQuery(op, fixtures), "", nil)
				if status >= 500 {
					t.Errorf("GET %s after the hostile writes = %d %s", path, status, body)
				}
			}

			hc.webhookTextIsCleaned()
		})
	}
}

// TestModelOutputIsStoredClean: a model's reply and tool arguments holding
// NUL, controls and bidi overrides are stored cleaned and read back, on
// both databases.
func TestModelOutputIsStoredClean(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			alice := st.token("alice@example.com")
			st.model.Enqueue(fakeopenai.TextChunks("Hello\x00 wor", "ld\x07 \u202eevil\u202c \ufeff!").
				WithToolCalls(fakeopenai.Call{ID: "call_1", Name: "resize_widget", Arguments: `{"service":"check\u0000out\u001b","desired_count":2}`}))
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale it"})
			if code != 200 || len(evs) == 0 || evs[len(evs)-1].Name != "done" {
				t.Fatalf("chat: %d %s", code, body)
			}
			conf := find(evs, "confirmation_required").Data
			session, _ := conf["session_id"].(string)
			if session == "" {
				t.Fatalf("no confirmation: %s", body)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/sessions/"+session, nil)
			if code != 200 {
				t.Fatalf("read back: %d %s", code, body)
			}
			if !bytes.Contains(body, []byte("Hello world evil !")) {
				t.Errorf("the reply was not stored cleaned: %s", body)
			}
			for _, bad := range []string{`\u0000`, `\u0007`, `\u001b`, "\u202e", "\ufeff"} {
				if bytes.Contains(body, []byte(bad)) {
					t.Errorf("the session still holds %q: %s", bad, body)
				}
			}
		})
	}
}

type hostileClient struct {
	t     *testing.T
	base  string
	token string
}

func (hc *hostileClient) send(method, path, contentType string, body []byte) (int, []byte) {
	hc.t.Helper()
	ctx, cancel := context.WithTimeout(hc.t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, hc.base+path, bytes.NewReader(body))
	if err != nil {
		hc.t.Fatalf("%s %q: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+hc.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		hc.t.Fatalf("%s %q: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if c, err := contractOf(hc.base); err == nil {
		if err := c.check(req, resp.StatusCode, resp.Header, raw); err != nil {
			hc.t.Errorf("openapi: %s %q → %d does not match openapi.json: %v\nbody: %.400s", method, path, resp.StatusCode, err, raw)
		}
	}
	return resp.StatusCode, raw
}

func (hc *hostileClient) openapi() *openapi3.T {
	hc.t.Helper()
	status, raw := hc.send(http.MethodGet, "/openapi.json", "", nil)
	if status != 200 {
		hc.t.Fatalf("/openapi.json = %d", status)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		hc.t.Fatal(err)
	}
	return doc
}

func sortedPaths(doc *openapi3.T) []string {
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	return paths
}

// hostileFixtures are real resources, so that hostile parameters and
// uploads reach the cores rather than stop at a missing resource.
type hostileFixtures struct {
	specSessionID string
	standardID    string
	accountID     string
	projectID     string
	briefID       string
}

func (hc *hostileClient) fixtures() hostileFixtures {
	hc.t.Helper()
	var f hostileFixtures
	decode := func(what string, status int, body []byte, want int, out any) {
		hc.t.Helper()
		if status != want || json.Unmarshal(body, out) != nil {
			hc.t.Fatalf("%s: %d %s", what, status, body)
		}
	}
	var id struct {
		ID string `json:"id"`
	}
	status, body := hc.send(http.MethodPost, "/pse/sessions", "application/json",
		[]byte(`{"name":"hostile fixture","inputs":[{"kind":"note","title":"n","content":"a note"}]}`))
	decode("create a spec session", status, body, 201, &id)
	f.specSessionID = id.ID
	status, body = hc.send(http.MethodPost, "/pse/standards", "application/json",
		[]byte(`{"title":"Tests","body":"Every story has a test.","applies_to":["stories"]}`))
	decode("create a standard", status, body, 201, &id)
	f.standardID = id.ID
	var accounts struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	status, body = hc.send(http.MethodGet, "/cloud/accounts", "", nil)
	decode("list cloud accounts", status, body, 200, &accounts)
	if len(accounts.Items) > 0 {
		f.accountID = accounts.Items[0].ID
	}
	f.projectID = uuid.NewString()
	status, body = hc.send(http.MethodPost, "/content/briefs", "application/json",
		[]byte(`{"project_id":"`+f.projectID+`","title":"Launch","goal":"Announce","audience":"devs","channel":"blog","format":"article"}`))
	decode("create a brief", status, body, 201, &id)
	f.briefID = id.ID
	return f
}

// param is the value a path or query parameter gets: a fixture's id where
// one fits, else a fresh UUID.
func (f hostileFixtures) param(path, name string) string {
	switch {
	case name == "session_id" && strings.Contains(path, "/pse/"):
		return f.specSessionID
	case name == "standard_id" || (name == "id" && strings.Contains(path, "/pse/standards")):
		return f.standardID
	case name == "account_id" && f.accountID != "":
		return f.accountID
	case name == "project_id":
		return f.projectID
	case name == "brief_id":
		return f.briefID
	}
	return uuid.NewString()
}

func (hc *hostileClient) requiredQuery(op *openapi3.Operation, f hostileFixtures) string {
	q := url.Values{}
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "query" && p.Value.Required {
			q.Set(p.Value.Name, f.param("", p.Value.Name))
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// tryOperation sends op its hostile variants.
func (hc *hostileClient) tryOperation(method, path string, item *openapi3.PathItem, op *openapi3.Operation, f hostileFixtures) {
	t := hc.t
	var params []*openapi3.Parameter
	for _, p := range slices.Concat(item.Parameters, op.Parameters) {
		if p.Value != nil && (p.Value.In == "path" || p.Value.In == "query") {
			params = append(params, p.Value)
		}
	}
	target := func(hostile, value string) string {
		p, q := path, url.Values{}
		for _, prm := range params {
			v := f.param(path, prm.Name)
			if prm.Name == hostile {
				v = value
			}
			if prm.In == "path" {
				p = strings.ReplaceAll(p, "{"+prm.Name+"}", url.PathEscape(v))
			} else if prm.Required || prm.Name == hostile {
				q.Set(prm.Name, v)
			}
		}
		if len(q) > 0 {
			p += "?" + q.Encode()
		}
		return p
	}

	var jsonSchema, formSchema *openapi3.Schema
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			jsonSchema = mt.Schema.Value
		}
		if mt := op.RequestBody.Value.Content.Get("multipart/form-data"); mt != nil && mt.Schema != nil {
			formSchema = mt.Schema.Value
		}
	}
	base := []byte(nil)
	ct := ""
	if jsonSchema != nil {
		base, _ = json.Marshal(sample(jsonSchema, path, f, 0))
		ct = "application/json"
	}

	// Each parameter holds each hostile class.
	for _, prm := range params {
		for _, hb := range hostileBytes {
			status, body := hc.send(method, target(prm.Name, hb.text), ct, base)
			if status >= 500 {
				t.Errorf("%s %s with %s in parameter %s = %d %s", method, path, hb.class, prm.Name, status, body)
			}
		}
	}

	// Each string field of the JSON body holds each hostile class.
	if jsonSchema != nil {
		for _, leaf := range stringLeaves(jsonSchema, sample(jsonSchema, path, f, 0), "") {
			for _, hl := range append(hostileLiterals, struct{ class, literal string }{"invalid UTF-8", "\"caf\xe9\""}) {
				body := withLeaf(sample(jsonSchema, path, f, 0), leaf.steps, hl.literal)
				status, resp := hc.send(method, target("", ""), "application/json", body)
				switch {
				case status >= 500:
					t.Errorf("%s %s with %s in %s = %d %s", method, path, hl.class, leaf.path, status, resp)
				case leaf.opaque:
				case status < 400:
					t.Errorf("%s %s accepted %s in the caller's field %s: %d %s", method, path, hl.class, leaf.path, status, resp)
				case status == 422 && !namesField(resp, leaf.path):
					t.Errorf("%s %s with %s in %s: the problem does not name the field: %s", method, path, hl.class, leaf.path, resp)
				}
			}
		}
	}

	// Each multipart text field holds each hostile class; a text file with a
	// NUL byte is not text.
	if formSchema != nil {
		for name, prop := range formSchema.Properties {
			if prop.Value == nil || prop.Value.Format == "binary" || (prop.Value.Items != nil && prop.Value.Items.Value != nil && prop.Value.Items.Value.Format == "binary") {
				continue
			}
			for _, hb := range hostileBytes {
				status, resp := hc.sendForm(method, target("", ""), map[string]string{name: hb.text}, "notes.md", "# Notes\n")
				if status >= 500 || status < 400 {
					t.Errorf("%s %s (multipart) with %s in field %s = %d %s", method, path, hb.class, name, status, resp)
				}
			}
		}
		if _, ok := formSchema.Properties["file"]; ok && !strings.Contains(path, "/audio/") {
			status, resp := hc.sendForm(method, target("", ""), map[string]string{"name": "upload"}, "notes.md", "text\x00with NUL")
			if status != http.StatusUnsupportedMediaType {
				t.Errorf("%s %s with a NUL byte in a text file = %d %s, want 415", method, path, status, resp)
			}
			for _, hb := range hostileBytes {
				status, resp := hc.sendForm(method, target("", ""), map[string]string{"name": "upload"}, hb.text+".md", "# Notes\n")
				if status >= 500 {
					t.Errorf("%s %s with %s in a file name = %d %s", method, path, hb.class, status, resp)
				}
			}
			status, resp = hc.sendForm(method, target("", ""), map[string]string{"name": "upload"}, "bom.md", "\ufeff# With a byte-order mark\n")
			if status >= 300 {
				t.Errorf("%s %s with a text file that starts with a byte-order mark = %d %s, want it accepted", method, path, status, resp)
			}
		}
	}
}

func (hc *hostileClient) sendForm(method, path string, fields map[string]string, fileName, fileContent string) (int, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_ = mw.WriteField(k, fields[k])
	}
	if _, ok := fields["name"]; !ok {
		_ = mw.WriteField("name", "upload")
	}
	field := "file"
	fw, _ := mw.CreateFormFile(field, fileName)
	_, _ = io.WriteString(fw, fileContent)
	_ = mw.Close()
	return hc.send(method, path, mw.FormDataContentType(), buf.Bytes())
}

// namesField reports whether a problem body's errors[] names field.
func namesField(body []byte, field string) bool {
	var p struct {
		Errors []ports.FieldError `json:"errors"`
	}
	if json.Unmarshal(body, &p) != nil {
		return false
	}
	return slices.ContainsFunc(p.Errors, func(e ports.FieldError) bool { return e.Field == field })
}

// sample returns a value valid for s as far as a schema says: every
// property present, one item per array, the first enum value, ids from the
// fixtures.
func sample(s *openapi3.Schema, path string, f hostileFixtures, depth int) any {
	if s == nil || depth > 6 {
		return nil
	}
	if len(s.OneOf) > 0 && s.OneOf[0].Value != nil {
		return sample(s.OneOf[0].Value, path, f, depth+1)
	}
	if len(s.AnyOf) > 0 && s.AnyOf[0].Value != nil {
		return sample(s.AnyOf[0].Value, path, f, depth+1)
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch {
	case s.Type.Includes("object") || len(s.Properties) > 0 || len(s.AllOf) > 0:
		m := map[string]any{}
		for _, all := range s.AllOf {
			if v, ok := sample(all.Value, path, f, depth+1).(map[string]any); ok {
				for k, x := range v {
					m[k] = x
				}
			}
		}
		for name, prop := range s.Properties {
			if prop.Value == nil || prop.Value.ReadOnly {
				continue
			}
			v := sample(prop.Value, path, f, depth+1)
			if strings.HasSuffix(name, "_at") && prop.Value.Type.Includes("null") {
				v = nil // a time the request may echo back
			}
			if _, ok := v.(string); ok && prop.Value.Format == "uuid" {
				v = f.param(path, name)
			}
			m[name] = v
		}
		return m
	case s.Type.Includes("array"):
		if s.Items == nil || s.Items.Value == nil {
			return []any{}
		}
		return []any{sample(s.Items.Value, path, f, depth+1)}
	case s.Type.Includes("string"):
		switch s.Format {
		case "uuid":
			return uuid.NewString()
		case "date-time":
			return time.Now().UTC().Format(time.RFC3339)
		case "date":
			return time.Now().UTC().Format(time.DateOnly)
		}
		return "text"
	case s.Type.Includes("integer"):
		if s.Min != nil {
			return int(*s.Min)
		}
		return 1
	case s.Type.Includes("number"):
		return 1
	case s.Type.Includes("boolean"):
		return false
	}
	return map[string]any{} // any value: an object
}

type leaf struct {
	steps  []any // string keys and int indexes
	path   string
	opaque bool // under a schema with no type: the caller's data for someone else
}

// stringLeaves lists the string values of v (built by sample from s).
func stringLeaves(s *openapi3.Schema, v any, path string) []leaf {
	return collectLeaves(s, v, nil, path, false)
}

func collectLeaves(s *openapi3.Schema, v any, steps []any, path string, opaque bool) []leaf {
	if s != nil && len(s.OneOf) > 0 {
		s = s.OneOf[0].Value
	}
	if s == nil || (s.Type == nil && len(s.Properties) == 0 && len(s.AllOf) == 0) {
		opaque = true
	}
	switch x := v.(type) {
	case string:
		return []leaf{{steps: slices.Clone(steps), path: path, opaque: opaque}}
	case map[string]any:
		var out []leaf
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var ps *openapi3.Schema
			if s != nil {
				if p := s.Properties[k]; p != nil {
					ps = p.Value
				}
				for _, all := range s.AllOf {
					if all.Value != nil && all.Value.Properties[k] != nil {
						ps = all.Value.Properties[k].Value
					}
				}
			}
			child := k
			if path != "" {
				child = path + "." + k
			}
			out = append(out, collectLeaves(ps, x[k], append(steps, k), child, opaque)...)
		}
		return out
	case []any:
		var out []leaf
		var is *openapi3.Schema
		if s != nil && s.Items != nil {
			is = s.Items.Value
		}
		for i, e := range x {
			out = append(out, collectLeaves(is, e, append(steps, i), fmt.Sprintf("%s[%d]", path, i), opaque)...)
		}
		return out
	}
	return nil
}

// withLeaf returns v as JSON with the leaf at steps replaced by a raw JSON
// literal (which encoding/json could not produce: a lone surrogate escape,
// invalid UTF-8).
func withLeaf(v any, steps []any, literal string) []byte {
	const placeholder = "\u2603hostile\u2603"
	set(v, steps, placeholder)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.Replace(buf.Bytes(), []byte(`"`+placeholder+`"`), []byte(literal), 1)
}

func set(v any, steps []any, value string) {
	for i, step := range steps {
		last := i == len(steps)-1
		switch k := step.(type) {
		case string:
			m := v.(map[string]any)
			if last {
				m[k] = value
				return
			}
			v = m[k]
		case int:
			a := v.([]any)
			if last {
				a[k] = value
				return
			}
			v = a[k]
		}
	}
}

// webhookTextIsCleaned delivers a signed push whose commit message and
// author hold hostile text: it is accepted (202), processed, and its
// activity reads back cleaned.
func (hc *hostileClient) webhookTextIsCleaned() {
	t := hc.t
	var repos struct {
		Items []struct {
			ID       string `json:"id"`
			FullName string `json:"full_name"`
		} `json:"items"`
	}
	status, body := hc.send(http.MethodGet, "/scm/repos", "", nil)
	if status != 200 || json.Unmarshal(body, &repos) != nil || len(repos.Items) == 0 {
		t.Fatalf("/scm/repos = %d %s", status, body)
	}
	repo := repos.Items[0]
	ghID := sandbox.Repos()[repo.FullName]
	owner, name, _ := strings.Cut(repo.FullName, "/")
	const marker = "mallory-hostile"
	payload, err := json.Marshal(fakegithub.PushEvent{
		Repo:   fakegithub.HookRepo{ID: ghID, Owner: fakegithub.HookUser{Login: owner, ID: 1, Organization: true}, Name: name},
		Sender: fakegithub.HookUser{Login: marker + "PLACEHOLDER", ID: 666},
		Ref:    "refs/heads/featPLACEHOLDER",
		Commits: []fakegithub.HookCommit{{
			ID: "1111111111111111111111111111111111111111", Message: "fix PLACEHOLDER", AuthorName: "Mal\u202eyrol", AuthorEmail: "mal@example.com",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	payload = bytes.ReplaceAll(payload, []byte("PLACEHOLDER"), []byte(`-nul\u0000-bell\u0007-lone\ud800-bom\ufeff-bidi\u202e`))
	deliverSandboxPush(t, hc.base, payload)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := hc.send(http.MethodGet, "/scm/repos/"+repo.ID+"/activity", "", nil)
		if status >= 500 {
			t.Fatalf("activity = %d %s", status, body)
		}
		if i := bytes.Index(body, []byte(marker)); i >= 0 {
			for _, bad := range []string{`\u0000`, `\u0007`, "\ufeff", "\u202e", `\ud800`} {
				if bytes.Contains(body, []byte(bad)) {
					t.Errorf("the activity holds %q: %s", bad, body)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the push never became activity: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deliverSandboxPush posts a push delivery with payload to a sandbox stack at
// base, signed with the sandbox's webhook secret, and wants 202.
func deliverSandboxPush(t *testing.T, base string, payload []byte) {
	t.Helper()
	d := fakegithub.NewDelivery("push", json.RawMessage(payload)).Signed([]byte(sandbox.WebhookSecret))
	req, err := d.Request(t.Context(), base+"/webhooks/scm")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push delivery = %d %s, want 202", resp.StatusCode, raw)
	}
}
