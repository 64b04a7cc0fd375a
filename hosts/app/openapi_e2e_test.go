package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/devpilot/devpilot/hosts/httpapi"
)

// Every response the end-to-end tests get from a stack is checked against the
// OpenAPI document that stack serves at /openapi.json: its status must be
// documented for the operation, and its headers, content type and body must
// match; each event of an SSE stream must match the stream's event schema. A
// request the document does not describe must be answered 404 (unknown path)
// or 405 (unknown method) with a problem. A mismatch fails the test.

// contract is a stack's OpenAPI document, ready to check responses with.
type contract struct {
	doc   *openapi3.T
	paths []contractPath
}

// contractPath is one path template of the document, split in segments.
type contractPath struct {
	template string
	segments []string // "{name}" for a parameter
	item     *openapi3.PathItem
}

type contractOnce struct {
	once sync.Once
	c    *contract
	err  error
}

// contracts holds each stack's contract by its base URL, fetched once.
var contracts sync.Map

// defineFormats teaches the validator the formats and media types it does
// not know by default.
var defineFormats sync.Once

// contractOf fetches base's /openapi.json the first time it is asked for,
// checks it is the embedded document and a valid OpenAPI 3.1 one, and
// indexes its paths.
func contractOf(base string) (*contract, error) {
	v, _ := contracts.LoadOrStore(base, &contractOnce{})
	co := v.(*contractOnce)
	co.once.Do(func() { co.c, co.err = loadContract(base) })
	return co.c, co.err
}

func loadContract(base string) (*contract, error) {
	defineFormats.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForUUIDOfRFC9562))
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)       // net/http's redirect link
		openapi3filter.RegisterBodyDecoder("application/sdp", openapi3filter.PlainBodyDecoder) // a voice call's SDP answer
	})
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(raw, httpapi.OpenAPI()) {
		return nil, fmt.Errorf("GET /openapi.json = %d, %d bytes: not the embedded document", resp.StatusCode, len(raw))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("loading /openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("/openapi.json is not valid OpenAPI: %w", err)
	}
	c := &contract{doc: doc}
	aliases, _ := doc.Extensions["x-devpilot-path-aliases"].(map[string]any)
	for template, item := range doc.Paths.Map() {
		c.paths = append(c.paths, contractPath{template: template, segments: strings.Split(template, "/"), item: item})
		// The document lists an aliased area's operations once; the
		// router serves them under each alias prefix (/api/v1) too.
		for prefix, areas := range aliases {
			list, _ := areas.([]any)
			for _, a := range list {
				area, _ := a.(string)
				if area != "" && (template == area || strings.HasPrefix(template, area+"/")) {
					alias := prefix + template
					c.paths = append(c.paths, contractPath{template: alias, segments: strings.Split(alias, "/"), item: item})
				}
			}
		}
	}
	return c, nil
}

// conform checks a response of the stack (resp.Request is what was sent,
// after any redirect; responses of other hosts are not checked). body is the
// whole body, already read. A mismatch is reported on t.
// send sends req to the stack and returns the answer's status, header and
// body, checked against the OpenAPI document as conform does.
func (st *stack) send(req *http.Request) (int, http.Header, []byte) {
	st.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	st.conform(st.t, resp, raw)
	return resp.StatusCode, resp.Header, raw
}

func (st *stack) conform(t testing.TB, resp *http.Response, body []byte) {
	t.Helper()
	base, err := url.Parse(st.base)
	if err != nil || resp.Request == nil || resp.Request.URL.Host != base.Host {
		return
	}
	c, err := contractOf(st.base)
	if err != nil {
		t.Errorf("openapi: %v", err)
		return
	}
	req := resp.Request
	if err := c.check(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("openapi: %s %s → %d does not match openapi.json: %v\nbody: %.600s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, body)
	}
}

// match finds the path template of path, static segments winning over
// parameters from the left, as httprouter and the content dispatch do.
func (c *contract) match(path string) (*contractPath, map[string]string) {
	segs := strings.Split(path, "/")
	var best *contractPath
	var bestParams map[string]string
	bestRank := ""
	for i := range c.paths {
		p := &c.paths[i]
		if len(p.segments) != len(segs) {
			continue
		}
		params := map[string]string{}
		rank := make([]byte, len(segs)) // '1' for a static segment: higher ranks win
		ok := true
		for j, s := range p.segments {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				if segs[j] == "" {
					ok = false
				}
				params[s[1:len(s)-1]] = segs[j]
				rank[j] = '0'
			case s == segs[j]:
				rank[j] = '1'
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && string(rank) > bestRank {
			best, bestParams, bestRank = p, params, string(rank)
		}
	}
	return best, bestParams
}

// check validates one response; nil when it conforms.
func (c *contract) check(req *http.Request, status int, header http.Header, body []byte) error {
	p, params := c.match(req.URL.Path)
	if p == nil {
		return c.checkProblem(http.StatusNotFound, "the path is not in the document", status, header, body)
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	op := p.item.GetOperation(method)
	if op == nil {
		return c.checkProblem(http.StatusMethodNotAllowed, "the method is not documented for "+p.template, status, header, body)
	}

	documented := op.Responses.Status(status)
	if status == http.StatusForbidden && documented == nil && (op.Security == nil || len(*op.Security) > 0) &&
		strings.Contains(header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		// Every authenticated operation may refuse a token's scopes: the
		// document says so once, in its description of the conventions.
		return c.checkProblem(status, "a token's scopes were refused", status, header, body)
	}
	if documented == nil || documented.Value == nil {
		return fmt.Errorf("status %d is not documented for %s %s", status, method, p.template)
	}
	contentType := header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	sse := mediaType == "text/event-stream"
	if len(documented.Value.Content) == 0 && len(body) > 0 {
		return fmt.Errorf("status %d has no body in the document, but %d bytes came (%s)", status, len(body), contentType)
	}

	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params,
			Route: &routers.Route{Spec: c.doc, Path: p.template, PathItem: p.item, Method: method, Operation: op},
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   sse, // checked event by event below
		},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if !sse {
		return nil
	}
	mt := documented.Value.Content.Get(contentType)
	if mt == nil {
		return fmt.Errorf("status %d is not documented as %s", status, contentType)
	}
	return c.checkEvents(mt, body)
}

// checkProblem checks the answer to a request the document does not
// describe: the router's 404 or 405, as a problem.
func (c *contract) checkProblem(want int, why string, status int, header http.Header, body []byte) error {
	if status != want {
		return fmt.Errorf("%s, so the answer must be %d, not %d", why, want, status)
	}
	if header.Get("X-Request-Id") == "" {
		return errors.New("no X-Request-Id")
	}
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "application/problem+json" {
		return fmt.Errorf("a %d must be application/problem+json, not %q", status, header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the problem is not JSON: %w", err)
	}
	return c.doc.Components.Schemas["Problem"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse(), openapi3.MultiErrors())
}

// checkEvents checks each event of an SSE body against the schema the media
// type names in x-event-schema: {"id", "event", "data"} with data parsed.
func (c *contract) checkEvents(mt *openapi3.MediaType, body []byte) error {
	ref, _ := mt.Extensions["x-event-schema"].(map[string]any)
	name, ok := strings.CutPrefix(fmt.Sprint(ref["$ref"]), "#/components/schemas/")
	schema := c.doc.Components.Schemas[name]
	if !ok || schema == nil || schema.Value == nil {
		return fmt.Errorf("the event stream's x-event-schema %v names no schema", mt.Extensions["x-event-schema"])
	}
	events, err := splitEvents(body)
	if err != nil {
		return err
	}
	for i, ev := range events {
		what, s := name, eventBranch(schema.Value, ev["event"])
		if s == nil {
			return fmt.Errorf("event %d (id %v) is named %q, which %s does not describe", i, ev["id"], ev["event"], name)
		}
		if s != schema.Value {
			what = fmt.Sprintf("%s's %v event", name, ev["event"])
		}
		if err := s.VisitJSON(ev, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
			return fmt.Errorf("event %d (id %v) does not match %s: %w", i, ev["id"], what, err)
		}
	}
	return nil
}

// eventBranch returns the alternative of a oneOf event schema whose event
// property is the constant name, for a precise error; the schema itself
// when it is not such a oneOf, nil when no alternative has that name.
func eventBranch(schema *openapi3.Schema, name any) *openapi3.Schema {
	if len(schema.OneOf) == 0 {
		return schema
	}
	for _, alt := range schema.OneOf {
		if ev := alt.Value.Properties["event"]; ev != nil && ev.Value != nil && ev.Value.Const == name {
			return alt.Value
		}
	}
	return nil
}

// splitEvents parses an SSE body into {"id", "event", "data"} values; a
// retry field in a block of its own is allowed; a field other than those,
// or a second data line, is an error.
func splitEvents(body []byte) ([]map[string]any, error) {
	var out []map[string]any
	cur := map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]any{}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: ": ping"
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if _, dup := cur[field]; dup {
			return nil, fmt.Errorf("an event has two %s lines", field)
		}
		switch field {
		case "retry": // the reconnection delay, in a block of its own
			if _, err := strconv.ParseUint(value, 10, 32); err != nil || len(cur) > 0 {
				return nil, fmt.Errorf("retry %q is not a number in a block of its own", value)
			}
			continue
		case "id":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("event id %q is not a number", value)
			}
			cur["id"] = float64(n)
		case "event":
			cur["event"] = value
		case "data":
			var v any
			if err := json.Unmarshal([]byte(value), &v); err != nil {
				return nil, fmt.Errorf("event data is not one line of JSON: %q", value)
			}
			cur["data"] = v
		default:
			return nil, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cur) > 0 {
		return nil, errors.New("the stream ends in the middle of an event")
	}
	return out, nil
}

// TestOpenAPIEndToEnd sends what the other end-to-end tests do not (the
// operational endpoints, the caller, unknown paths and methods, HEAD) so
// that their answers are held to the document too.
func TestOpenAPIEndToEnd(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	tok := st.token("olga@example.com")
	for _, tt := range []struct {
		method, path string
		token        string
		status       int
	}{
		{"GET", "/livez", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/metrics", "", 200},
		{"GET", "/openapi.json", "", 200},
		{"GET", "/api/v1/me", tok, 200},
		{"HEAD", "/api/v1/me", tok, 200},
		{"GET", "/api/v1/me", "", 401},
		{"GET", "/api/v1/me", "dp_not-a-token", 401},
		{"GET", "/api/v1/nowhere", tok, 404},
		{"GET", "/api/v1/me/", tok, 404},
		{"DELETE", "/livez", tok, 405},
		{"GET", "/content/generate", tok, 405},
		{"GET", "/content/brands", tok, 404},
		{"GET", "/api/v1/agent/sessions/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", tok, 404},
		{"GET", "/api/v1/agent/sessions/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/stream", tok, 404},
	} {
		if code, body, _ := st.call(tt.token, tt.method, tt.path, nil); code != tt.status {
			t.Errorf("%s %s = %d %.300s, want %d", tt.method, tt.path, code, body, tt.status)
		}
	}
}
