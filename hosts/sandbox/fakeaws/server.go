// Package fakeaws is one HTTP server that speaks the wire protocols of the
// AWS services devpilot uses, so the real aws-sdk-go-v2 clients can be
// tested over real HTTP without reaching AWS:
//
//   - awsJson1_1 (POST / with X-Amz-Target) for ECS
//     (AmazonEC2ContainerServiceV20141113.*), CloudWatch Logs
//     (Logs_20140328.*) and Cost Explorer (AWSInsightsIndexService.*);
//   - restJson1 for Lambda (/2015-03-31/functions/...) and Amplify (/apps...);
//   - awsQuery (form-encoded POST / with Action=..., XML answers) for STS
//     GetCallerIdentity and AssumeRole.
//
// Every request must carry a well-formed SigV4 Authorization header whose
// credential scope names the right service (the signature itself is not
// verified) and an access key the fake knows: a seeded user's, or temporary
// credentials the fake issued from AssumeRole, which also need their session
// token. The request is then served from seeded state (see Account), unless
// an injected Fault answers first, and recorded as a Call.
//
// It lives under hosts/sandbox because the sandbox serves it in the binary,
// seeded with demo data; tests import it from here.
package fakeaws

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Service names, as they appear in a SigV4 credential scope and in Call.
const (
	ServiceSTS     = "sts"
	ServiceECS     = "ecs"
	ServiceLogs    = "logs"
	ServiceCost    = "ce"
	ServiceLambda  = "lambda"
	ServiceAmplify = "amplify"
)

// The X-Amz-Target prefixes of the awsJson1_1 services.
const (
	targetECS  = "AmazonEC2ContainerServiceV20141113"
	targetLogs = "Logs_20140328"
	targetCost = "AWSInsightsIndexService"
)

// Call is one request the fake received.
type Call struct {
	// Service is the service's signing name, such as "ecs".
	Service string
	// Operation is the API operation, such as "ListClusters".
	Operation string
	// Region is the region of the SigV4 credential scope.
	Region string
	// AccessKeyID is the access key id of the SigV4 credential scope.
	AccessKeyID string
	// Attempt is the SDK's attempt number from the amz-sdk-request header
	// (1 for the first try), or 0 when the header is absent.
	Attempt int
	// Input is the parsed request: the JSON body for JSON services, the form
	// values for STS, and for REST services the path labels, query values,
	// bound headers and body members, named as in the service's API.
	Input map[string]any
	// Status is the HTTP status the fake answered with.
	Status int
	// ErrorCode is the error code the fake answered with, "" on success.
	ErrorCode string
}

// Server is a started or startable fake. It is safe for concurrent use; seed
// it through Account and inject failures with Inject at any time.
type Server struct {
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	accounts map[string]*account
	keys     map[string]*principal
	roles    map[string]*role
	faults   []*fault
	calls    []Call
	pageSize int
	regions  map[string]bool
	seq      int
	// buildTime, when positive, is how long a job StartJob starts takes:
	// RUNNING (its BUILD step running) for the first half, then SUCCEED with
	// BUILD and DEPLOY steps. Zero leaves new jobs PENDING.
	buildTime time.Duration
}

// BuildsFinishAfter makes each Amplify job started from now on run for d and
// then succeed, with a BUILD and a DEPLOY step and their logs, as a real
// release build does; d <= 0 leaves new jobs PENDING (the default).
func (s *Server) BuildsFinishAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buildTime = d
}

// New starts a fake on a loopback port and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := NewHandler()
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// NewHandler returns a fake that is not listening: serve it with any
// http.Server (ServeHTTP), as a sandbox does. URLs it hands out (Amplify log
// URLs) are built from each request's Host.
func NewHandler() *Server {
	return &Server{
		closing:  make(chan struct{}),
		accounts: map[string]*account{},
		keys:     map[string]*principal{},
		roles:    map[string]*role{},
	}
}

// URL is the fake's base URL, to be used as the SDK's base endpoint
// (aws.Config.BaseEndpoint or AWS_ENDPOINT_URL); "" for a NewHandler fake.
func (s *Server) URL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL
}

// Close releases requests held by a Hang fault and, for a New fake, stops
// the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	if s.srv != nil {
		s.srv.Close()
	}
}

// MaxPageSize caps every paginated answer (clusters, services, functions,
// apps, branches, log events, cost results) at n items, so tests can force
// pagination; 0 restores each operation's own default.
func (s *Server) MaxPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Regions restricts the regions the fake accepts in credential scopes; by
// default any well-formed region is accepted.
func (s *Server) Regions(regions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regions = map[string]bool{}
	for _, r := range regions {
		s.regions[r] = true
	}
}

// Calls returns every call received so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsTo returns the calls to one service's operation; operation "" means
// every operation of the service.
func (s *Server) CallsTo(service, operation string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Service == service && (operation == "" || c.Operation == operation) {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls forgets the calls recorded so far.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// apiError is an error answer in the protocol of the service at hand.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter string
}

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func invalidParameter(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, "InvalidParameterException", format, args...)
}

// reply is a successful answer: body is marshalled as JSON unless it is raw
// bytes.
type reply struct {
	status int
	header http.Header
	body   any
}

// request is one request being served.
type request struct {
	s         *Server
	r         *http.Request
	service   string
	operation string
	proto     protocol
	region    string
	keyID     string
	principal *principal
	input     map[string]any
	body      []byte
	callIndex int
}

func (rq *request) account() *account { return rq.principal.account }

type protocol int

const (
	protoJSON protocol = iota
	protoREST
	protoQuery
)

type handler func(*request) (*reply, *apiError)

// ServeHTTP serves one request of any of the fake's services.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, logPathPrefix) {
		s.serveBuildLog(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	rq := &request{s: s, r: r, body: body, callIndex: -1}
	h, aerr := s.route(rq)
	if aerr == nil {
		aerr = s.authenticate(rq)
	}
	s.record(rq)
	if aerr == nil {
		aerr = s.applyFault(rq)
	}
	var rep *reply
	if aerr == nil {
		rep, aerr = h(rq)
	}
	if aerr != nil {
		s.finish(rq, aerr.status, aerr.code)
		writeError(w, rq.proto, aerr)
		return
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	s.finish(rq, status, "")
	writeReply(w, rq.proto, status, rep)
}

// route finds the service, operation and handler of rq and parses its input.
func (s *Server) route(rq *request) (handler, *apiError) {
	r := rq.r
	path := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodPost && path == "/" && r.Header.Get("X-Amz-Target") != "":
		rq.proto = protoJSON
		return s.routeJSON(rq)
	case r.Method == http.MethodPost && path == "/" &&
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded"):
		rq.proto = protoQuery
		return s.routeQuery(rq)
	case strings.HasPrefix(path, "/2015-03-31/functions"):
		rq.proto, rq.service = protoREST, ServiceLambda
		return s.routeLambda(rq, path)
	case path == "/apps" || strings.HasPrefix(path, "/apps/"):
		rq.proto, rq.service = protoREST, ServiceAmplify
		return s.routeAmplify(rq, path)
	}
	rq.proto = protoREST
	return nil, errf(http.StatusNotFound, "UnknownOperationException", "fakeaws: no operation serves %s %s", r.Method, path)
}

var jsonOperations = map[string]map[string]handler{
	targetECS: {
		"ListClusters":           ecsListClusters,
		"DescribeClusters":       ecsDescribeClusters,
		"ListServices":           ecsListServices,
		"DescribeServices":       ecsDescribeServices,
		"UpdateService":          ecsUpdateService,
		"DescribeTaskDefinition": ecsDescribeTaskDefinition,
		"ListTasks":              ecsListTasks,
		"DescribeTasks":          ecsDescribeTasks,
	},
	targetLogs: {"FilterLogEvents": logsFilterLogEvents},
	targetCost: {"GetCostAndUsage": ceGetCostAndUsage, "GetCostForecast": ceGetCostForecast},
}

var jsonServices = map[string]string{targetECS: ServiceECS, targetLogs: ServiceLogs, targetCost: ServiceCost}

func (s *Server) routeJSON(rq *request) (handler, *apiError) {
	prefix, op, _ := strings.Cut(rq.r.Header.Get("X-Amz-Target"), ".")
	rq.service, rq.operation = jsonServices[prefix], op
	h := jsonOperations[prefix][op]
	if h == nil {
		return nil, errf(http.StatusBadRequest, "UnknownOperationException", "fakeaws: unknown operation %q", rq.r.Header.Get("X-Amz-Target"))
	}
	if ct := rq.r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		return nil, errf(http.StatusBadRequest, "SerializationException", "fakeaws: Content-Type %q is not application/x-amz-json-1.1", ct)
	}
	rq.input = map[string]any{}
	if len(rq.body) > 0 {
		if err := json.Unmarshal(rq.body, &rq.input); err != nil {
			return nil, errf(http.StatusBadRequest, "SerializationException", "fakeaws: the body is not a JSON object: %v", err)
		}
	}
	return h, nil
}

func (s *Server) routeQuery(rq *request) (handler, *apiError) {
	rq.service = ServiceSTS
	form, err := url.ParseQuery(string(rq.body))
	if err != nil {
		return nil, errf(http.StatusBadRequest, "MalformedQueryString", "fakeaws: %v", err)
	}
	rq.input = map[string]any{}
	for k, vs := range form {
		rq.input[k] = vs[0]
	}
	rq.operation = form.Get("Action")
	if v := form.Get("Version"); v != "2011-06-15" {
		return nil, errf(http.StatusBadRequest, "InvalidAction", "fakeaws: Version %q is not 2011-06-15", v)
	}
	switch rq.operation {
	case "GetCallerIdentity":
		return stsGetCallerIdentity, nil
	case "AssumeRole":
		return stsAssumeRole, nil
	}
	return nil, errf(http.StatusBadRequest, "InvalidAction", "fakeaws: unknown Action %q", rq.operation)
}

// splitPath returns the unescaped segments of an escaped path.
func splitPath(path string) ([]string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

// restInput fills rq.input from the path labels and the query.
func (rq *request) restInput(labels map[string]string) {
	rq.input = map[string]any{}
	for k, v := range labels {
		rq.input[k] = v
	}
	for k, vs := range rq.r.URL.Query() {
		rq.input[k] = vs[0]
	}
}

// jsonBody adds the members of a JSON body to rq.input.
func (rq *request) jsonBody() *apiError {
	if len(rq.body) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(rq.body, &m); err != nil {
		return errf(http.StatusBadRequest, "BadRequestException", "fakeaws: the body is not a JSON object: %v", err)
	}
	for k, v := range m {
		rq.input[k] = v
	}
	return nil
}

// SigV4 Authorization header, as the SDK writes it.
var authPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([^/,\s]+)/([^/,\s]+)/aws4_request, ?SignedHeaders=([a-z0-9;\-]+), ?Signature=([0-9a-f]{64})$`)

var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)

// authenticate checks rq's SigV4 Authorization header and finds its
// principal.
func (s *Server) authenticate(rq *request) *apiError {
	h := rq.r.Header.Get("Authorization")
	if h == "" {
		return errf(http.StatusForbidden, authCode(rq, "MissingAuthenticationTokenException", "MissingAuthenticationToken"),
			"Missing Authentication Token")
	}
	m := authPattern.FindStringSubmatch(h)
	if m == nil {
		return errf(http.StatusForbidden, authCode(rq, "IncompleteSignatureException", "IncompleteSignature"),
			"Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization=%s", redactSignature(h))
	}
	keyID, date, region, service, signed := m[1], m[2], m[3], m[4], m[5]
	rq.region, rq.keyID = region, keyID
	amzDate := rq.r.Header.Get("X-Amz-Date")
	if _, err := time.Parse("20060102T150405Z", amzDate); err != nil || !strings.HasPrefix(amzDate, date) {
		return errf(http.StatusForbidden, authCode(rq, "IncompleteSignatureException", "IncompleteSignature"),
			"X-Amz-Date %q does not match the credential scope date %s", amzDate, date)
	}
	headers := strings.Split(signed, ";")
	if !contains(headers, "host") || !contains(headers, "x-amz-date") {
		return errf(http.StatusForbidden, authCode(rq, "IncompleteSignatureException", "IncompleteSignature"),
			"SignedHeaders %q must include host and x-amz-date", signed)
	}
	if service != rq.service {
		return errf(http.StatusForbidden, authCode(rq, "InvalidSignatureException", "SignatureDoesNotMatch"),
			"Credential should be scoped to correct service: '%s'.", rq.service)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !regionPattern.MatchString(region) || (len(s.regions) > 0 && !s.regions[region]) {
		return errf(http.StatusForbidden, authCode(rq, "InvalidSignatureException", "SignatureDoesNotMatch"),
			"Credential should be scoped to a valid region.")
	}
	p := s.keys[keyID]
	if p == nil || (p.sessionToken != "" && rq.r.Header.Get("X-Amz-Security-Token") != p.sessionToken) {
		return errf(http.StatusForbidden, authCode(rq, "UnrecognizedClientException", "InvalidClientTokenId"),
			"The security token included in the request is invalid.")
	}
	if p.sessionToken != "" && !contains(headers, "x-amz-security-token") {
		return errf(http.StatusForbidden, authCode(rq, "IncompleteSignatureException", "IncompleteSignature"),
			"SignedHeaders must include x-amz-security-token")
	}
	rq.principal = p
	return nil
}

func authCode(rq *request, jsonCode, queryCode string) string {
	if rq.proto == protoQuery {
		return queryCode
	}
	return jsonCode
}

func redactSignature(h string) string {
	if i := strings.Index(h, "Signature="); i >= 0 {
		return h[:i] + "Signature=..."
	}
	return h
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (s *Server) record(rq *request) {
	c := Call{Service: rq.service, Operation: rq.operation, Region: rq.region, AccessKeyID: rq.keyID, Input: map[string]any{}}
	for k, v := range rq.input {
		c.Input[k] = v
	}
	if v := rq.r.Header.Get("Amz-Sdk-Request"); v != "" {
		for _, part := range strings.Split(v, ";") {
			if n, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
				c.Attempt, _ = strconv.Atoi(n)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rq.callIndex = len(s.calls)
	s.calls = append(s.calls, c)
}

func (s *Server) finish(rq *request, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rq.callIndex >= 0 && rq.callIndex < len(s.calls) {
		s.calls[rq.callIndex].Status = status
		s.calls[rq.callIndex].ErrorCode = code
	}
}

func writeReply(w http.ResponseWriter, proto protocol, status int, rep *reply) {
	for k, vs := range rep.header {
		w.Header()[k] = vs
	}
	w.Header().Set("X-Amzn-Requestid", requestID())
	var body []byte
	switch b := rep.body.(type) {
	case nil:
	case []byte:
		body = b
	default:
		var err error
		if proto == protoQuery {
			body, err = xmlDocument(b)
		} else {
			body, err = json.Marshal(b)
		}
		if err != nil {
			panic(fmt.Sprintf("fakeaws: encoding a reply: %v", err))
		}
		if w.Header().Get("Content-Type") == "" {
			switch proto {
			case protoJSON:
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			case protoQuery:
				w.Header().Set("Content-Type", "text/xml")
			default:
				w.Header().Set("Content-Type", "application/json")
			}
		}
	}
	if status != http.StatusNoContent {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, proto protocol, e *apiError) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	w.Header().Set("X-Amzn-Requestid", requestID())
	var body []byte
	switch proto {
	case protoQuery:
		body = queryErrorBody(e)
		w.Header().Set("Content-Type", "text/xml")
	case protoJSON:
		body, _ = json.Marshal(map[string]string{"__type": e.code, "message": e.message})
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	default:
		w.Header().Set("X-Amzn-Errortype", e.code)
		body, _ = json.Marshal(map[string]string{"Type": "User", "message": e.message})
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

var (
	reqIDMu  sync.Mutex
	reqIDSeq int
)

func requestID() string {
	reqIDMu.Lock()
	defer reqIDMu.Unlock()
	reqIDSeq++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", reqIDSeq)
}

// page returns the bounds [start, end) of a page of a list of n items for a
// page token and limit, and the next page's token ("" at the end). The
// caller holds the lock.
func (s *Server) page(op, token string, n, limit, defaultLimit int) (start, end int, next string, aerr *apiError) {
	if limit <= 0 {
		limit = defaultLimit
	}
	if s.pageSize > 0 && limit > s.pageSize {
		limit = s.pageSize
	}
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		rest, ok := strings.CutPrefix(string(raw), op+":")
		if err != nil || !ok {
			return 0, 0, "", invalidParameter("Invalid token %q", token)
		}
		start, err = strconv.Atoi(rest)
		if err != nil || start < 0 || start > n {
			return 0, 0, "", invalidParameter("Invalid token %q", token)
		}
	}
	end = min(start+limit, n)
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte(op + ":" + strconv.Itoa(end)))
	}
	return start, end, next, nil
}

// Input accessors: JSON numbers arrive as float64, REST query values as
// strings.

func str(in map[string]any, k string) string {
	s, _ := in[k].(string)
	return s
}

func num(in map[string]any, k string) (int64, bool, *apiError) {
	switch v := in[k].(type) {
	case nil:
		return 0, false, nil
	case float64:
		return int64(v), true, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, invalidParameter("%s must be a number", k)
		}
		return n, true, nil
	}
	return 0, false, invalidParameter("%s must be a number", k)
}

func strList(in map[string]any, k string) ([]string, *apiError) {
	v, ok := in[k]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, invalidParameter("%s must be a list of strings", k)
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, invalidParameter("%s must be a list of strings", k)
		}
		out = append(out, s)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}
