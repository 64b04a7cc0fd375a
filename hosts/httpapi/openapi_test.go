package httpapi

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// loadOpenAPI parses the embedded document and validates it as OpenAPI 3.1.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(OpenAPI())
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi.json is OpenAPI %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.json is not valid OpenAPI 3.1: %v", err)
	}
	return doc
}

// Stand-ins that make New register every group of routes; their methods are
// never called.
type (
	stubIdentity  struct{ Identity }
	stubReadiness struct{ Readiness }
	stubAssistant struct{ Assistant }
	stubSpec      struct{ Spec }
	stubCloud     struct{ Cloud }
	stubSCM       struct{ SCM }
	stubContent   struct{ Content }
	stubVoice     struct{ Voice }
	stubUsage     struct{ Usage }
	stubTokens    struct{ Tokens }
	stubAuditLog  struct{ AuditLog }
	stubMembers   struct{ Membership }
	stubSignIn    struct{ SignIn }
	stubCipher    struct{ ports.Cipher }
	stubInvites   struct{ Invitations }
	stubIdem      struct{ ports.IdempotencyStore }
	stubPerms     struct{ Permissions }
)

func (stubPerms) CheckRoute(context.Context, string, string) error { return nil }

func (stubIdentity) Authenticate(context.Context, string) (ports.Principal, error) {
	return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated}
}

func (stubIdentity) Me(context.Context) (identity.Me, error) { return identity.Me{}, nil }

func (stubReadiness) Ready(context.Context) error { return nil }

type stubMCP struct{ MCPServers }

func fullServer() *Server {
	return New(Config{}, Deps{
		Identity: stubIdentity{}, Ready: stubReadiness{},
		Assistant: stubAssistant{}, Spec: stubSpec{}, Cloud: stubCloud{}, SCM: stubSCM{}, Content: stubContent{}, Voice: stubVoice{},
		Usage: stubUsage{}, Tokens: stubTokens{}, AuditLog: stubAuditLog{}, Members: stubMembers{}, Invitations: stubInvites{}, Idempotency: stubIdem{}, Permissions: stubPerms{},
		MCP:             stubMCP{},
		IdempotencySeal: stubCipher{}, SignIn: stubSignIn{}, SignInSeal: stubCipher{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// documentedRoute is what the router promises about one operation.
type documentedRoute struct {
	public, streaming, idempotent bool
	pattern                       string // as registered
}

var routeParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// expectedOperations maps "METHOD /path/{param}" to each route the router
// serves: httprouter's :param is OpenAPI's {param}, and the content
// dispatch routes expand to the paths of contentTable.
func expectedOperations(t *testing.T, s *Server) map[string]documentedRoute {
	t.Helper()
	ops := map[string]documentedRoute{}
	add := func(method, path string, rt route) {
		key := method + " " + path
		if _, dup := ops[key]; dup {
			t.Errorf("%s is registered twice", key)
		}
		ops[key] = documentedRoute{public: rt.public, streaming: rt.streaming, idempotent: s.idempotent(rt), pattern: rt.pattern}
	}
	table := s.contentTable()
	for _, rt := range s.registered {
		prefix, segments, dispatched := contentDispatchPattern(rt.pattern)
		if !dispatched {
			add(rt.method, routeParam.ReplaceAllString(rt.pattern, "{$1}"), rt)
			continue
		}
		for key, methods := range table {
			if key.segments != segments || methods[rt.method] == nil {
				continue
			}
			pattern, ok := contentPatterns[key]
			if !ok {
				t.Fatalf("contentTable has %+v: name its route in contentPatterns", key)
			}
			path := prefix + routeParam.ReplaceAllString(strings.TrimPrefix(pattern, "/content"), "{$1}")
			// GET /content/:a/:b streams for the events alone.
			op := rt
			op.streaming = rt.streaming && strings.HasSuffix(pattern, "/events")
			add(rt.method, path, op)
		}
	}
	return ops
}

// contentDispatchPattern reports whether pattern is one of the catch-all
// content routes, with the prefix before its parameters.
func contentDispatchPattern(pattern string) (prefix string, segments int, ok bool) {
	if p, found := strings.CutSuffix(pattern, "/:a/:b/:c"); found && strings.HasSuffix(p, "/content") {
		return p, 3, true
	}
	if p, found := strings.CutSuffix(pattern, "/:a/:b"); found && strings.HasSuffix(p, "/content") {
		return p, 2, true
	}
	if p, found := strings.CutSuffix(pattern, "/:a"); found && strings.HasSuffix(p, "/content") {
		return p, 1, true
	}
	return "", 0, false
}

func documentedOperations(doc *openapi3.T) map[string]*openapi3.Operation {
	ops := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path] = op
		}
	}
	return ops
}

// pathAliases reads the document's x-devpilot-path-aliases: each prefix
// (such as /api/v1) with the areas (such as /pse) whose paths are served
// under it too.
func pathAliases(t *testing.T, doc *openapi3.T) map[string][]string {
	t.Helper()
	raw, ok := doc.Extensions["x-devpilot-path-aliases"].(map[string]any)
	if !ok || len(raw) == 0 {
		t.Fatalf("openapi.json has no x-devpilot-path-aliases object: %#v", doc.Extensions["x-devpilot-path-aliases"])
	}
	aliases := map[string][]string{}
	for prefix, v := range raw {
		areas, _ := v.([]any)
		if !strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || len(areas) == 0 {
			t.Fatalf("x-devpilot-path-aliases: %q: %#v is not a prefix with a list of areas", prefix, v)
		}
		for _, a := range areas {
			area, _ := a.(string)
			if !strings.HasPrefix(area, "/") || strings.HasSuffix(area, "/") {
				t.Fatalf("x-devpilot-path-aliases: %q: area %#v is not a path", prefix, a)
			}
			aliases[prefix] = append(aliases[prefix], area)
		}
	}
	return aliases
}

// inArea reports whether path is area or lies under it.
func inArea(path, area string) bool {
	return path == area || strings.HasPrefix(path, area+"/")
}

// servedOperations is documentedOperations with each operation of an
// aliased area repeated under the alias's prefix, as the router serves it.
func servedOperations(t *testing.T, doc *openapi3.T) map[string]*openapi3.Operation {
	t.Helper()
	ops := documentedOperations(doc)
	aliases := pathAliases(t, doc)
	for key, op := range documentedOperations(doc) {
		method, path, _ := strings.Cut(key, " ")
		for prefix, areas := range aliases {
			if strings.HasPrefix(path, prefix+"/") {
				continue
			}
			if slices.ContainsFunc(areas, func(area string) bool { return inArea(path, area) }) {
				alias := method + " " + prefix + path
				if _, dup := ops[alias]; dup {
					t.Errorf("openapi.json lists %s, which x-devpilot-path-aliases already describes", alias)
				}
				ops[alias] = op
			}
		}
	}
	return ops
}

func isEventStream(op *openapi3.Operation) bool {
	for code, resp := range op.Responses.Map() {
		if strings.HasPrefix(code, "2") && resp.Value != nil && resp.Value.Content.Get("text/event-stream") != nil {
			return true
		}
	}
	return false
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	routes := expectedOperations(t, fullServer())
	ops := servedOperations(t, doc) // with the /api/v1 aliases

	for _, key := range slices.Sorted(maps.Keys(routes)) {
		rt := routes[key]
		op, ok := ops[key]
		if !ok {
			t.Errorf("%s (route %s) is not in openapi.json", key, rt.pattern)
			continue
		}
		public := op.Security != nil && len(*op.Security) == 0
		if public != rt.public {
			t.Errorf("%s: the route is public=%v, the document says security %v", key, rt.public, op.Security)
		}
		if sse := isEventStream(op); sse && !rt.streaming {
			t.Errorf("%s answers text/event-stream in the document, but the route is not streaming", key)
		} else if !sse && rt.streaming {
			t.Errorf("%s is a streaming route, but the document has no text/event-stream answer", key)
		}
		if idem := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "Idempotency-Key") != nil; idem != rt.idempotent {
			t.Errorf("%s: the route takes Idempotency-Key=%v, the document says %v", key, rt.idempotent, idem)
		} else if idem {
			for _, code := range []string{"400", "409", "422"} { // a bad key, a key in use, a key reused
				if op.Responses.Value(code) == nil {
					t.Errorf("%s takes Idempotency-Key but does not document %s", key, code)
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		if _, ok := routes[key]; !ok {
			t.Errorf("openapi.json describes %s, which no route serves", key)
		}
	}
}

// TestOpenAPIResponses holds every operation to the conventions: errors are
// problem+json, every operation may fail with 5XX, authenticated ones with
// 401, and every response carries X-Request-Id.
func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	ops := documentedOperations(doc)
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		op := ops[key]
		public := op.Security != nil && len(*op.Security) == 0
		if op.Responses.Value("5XX") == nil {
			t.Errorf("%s: no 5XX response", key)
		}
		if !public && op.Responses.Value("401") == nil {
			t.Errorf("%s: authenticated, but no 401 response", key)
		}
		for code, ref := range op.Responses.Map() {
			resp := ref.Value
			if resp.Headers["X-Request-Id"] == nil {
				t.Errorf("%s %s: no X-Request-Id header", key, code)
			}
			if code[0] != '4' && code[0] != '5' {
				continue
			}
			mt := resp.Content.Get("application/problem+json")
			if len(resp.Content) != 1 || mt == nil || !refersTo(mt.Schema, "#/components/schemas/Problem") {
				t.Errorf("%s %s: an error response must be application/problem+json with a Problem", key, code)
			}
		}
	}
}

func refersTo(s *openapi3.SchemaRef, ref string) bool {
	if s == nil {
		return false
	}
	if s.Ref == ref {
		return true
	}
	return s.Value != nil && slices.ContainsFunc(s.Value.AllOf, func(s *openapi3.SchemaRef) bool { return s.Ref == ref })
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	fullServer().Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rr.Code != http.StatusOK || rr.Header().Get("Content-Type") != "application/json; charset=utf-8" || rr.Body.String() != string(openapiDoc) {
		t.Fatalf("GET /openapi.json = %d %q, %d bytes", rr.Code, rr.Header().Get("Content-Type"), rr.Body.Len())
	}
	if got := OpenAPI(); &got[0] == &openapiDoc[0] {
		t.Fatal("OpenAPI returns the embedded bytes, not a copy")
	}
}

// TestOpenAPIBodyLimitOnPublicReads: the public reads whose only documented
// client error is 413 (the probes, metrics, this document, the sign-in
// config) do refuse a body over the limit, as the document says.
func TestOpenAPIBodyLimitOnPublicReads(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	s := fullServer()
	checked := 0
	ops := documentedOperations(doc)
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		op := ops[key]
		method, path, _ := strings.Cut(key, " ")
		var clientErrors []string
		for code := range op.Responses.Map() {
			if code[0] == '4' {
				clientErrors = append(clientErrors, code)
			}
		}
		if method != http.MethodGet || !slices.Equal(clientErrors, []string{"413"}) {
			continue
		}
		checked++
		rr := httptest.NewRecorder()
		s.Handler().ServeHTTP(rr, httptest.NewRequest(method, path, strings.NewReader(strings.Repeat("x", int(DefaultBodyLimit)+1))))
		if rr.Code != http.StatusRequestEntityTooLarge || rr.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s with a body over the limit = %d %q, want the documented 413 problem", key, rr.Code, rr.Header().Get("Content-Type"))
		}
	}
	if checked != 5 {
		t.Errorf("%d public reads document only a 413, want 5 (/livez, /readyz, /metrics, /openapi.json, /auth/config)", checked)
	}
}
