// Package fakeotlp is an OpenTelemetry collector for tests: a real HTTP
// server that receives spans the way a collector's OTLP/HTTP receiver does
// (POST /v1/traces, protobuf, optionally gzipped) and keeps them, so that a
// test sees what devpilot's real exporter sent.
package fakeotlp

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TracesPath is where spans are posted.
const TracesPath = "/v1/traces"

// Span is one received span, its ids in hex.
type Span struct {
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root
	Name         string
	// Kind is the OTLP span kind's name without its prefix: SERVER,
	// CLIENT, INTERNAL, PRODUCER, CONSUMER.
	Kind string
	// Scope is the instrumentation scope's name.
	Scope string
	// Service is the resource's service.name.
	Service    string
	Attributes map[string]string // every value as text; an array as JSON (["stop"])
	// Types are the OTLP value types of the attributes: string, int,
	// bool, double, array, kvlist or bytes.
	Types map[string]string
	Links []Link
	// Error reports the span's status is Error.
	Error bool
	// StatusMessage is the status's description.
	StatusMessage string
	Start         time.Time
	End           time.Time
}

// Link is a span's link to another span.
type Link struct {
	TraceID string
	SpanID  string
}

// Server is a running collector.
type Server struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	posts int
}

// New starts a collector, stopped when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.receive))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the collector's base URL (an OTEL_EXPORTER_OTLP_ENDPOINT).
func (s *Server) URL() string { return s.srv.URL }

// TracesURL is the URL spans are posted to (an
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func (s *Server) TracesURL() string { return s.srv.URL + TracesPath }

// Spans returns the spans received so far, in the order received.
func (s *Server) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spans)
}

// Posts counts the export requests received.
func (s *Server) Posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

// WaitFor polls the spans until cond holds of them, and fails the test
// when it does not within d.
func (s *Server) WaitFor(t testing.TB, d time.Duration, what string, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		spans := s.Spans()
		if cond(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, no %s among %d spans:\n%s", d, what, len(spans), Describe(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Describe lists spans one per line, for a failure message.
func Describe(spans []Span) string {
	var out []byte
	for _, sp := range spans {
		out = fmt.Appendf(out, "  %s %s parent=%s %s %q", sp.TraceID[:8], sp.SpanID, sp.ParentSpanID, sp.Kind, sp.Name)
		for _, l := range sp.Links {
			out = fmt.Appendf(out, " link=%s/%s", l.TraceID[:8], l.SpanID)
		}
		if q := sp.Attributes["db.query.text"]; q != "" {
			out = fmt.Appendf(out, " sql=%.60q", q)
		}
		out = append(out, '\n')
	}
	return string(out)
}

func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != TracesPath {
		http.NotFound(w, r)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				span := Span{
					TraceID:       hex.EncodeToString(sp.GetTraceId()),
					SpanID:        hex.EncodeToString(sp.GetSpanId()),
					Name:          sp.GetName(),
					Kind:          kindName(int32(sp.GetKind())),
					Scope:         ss.GetScope().GetName(),
					Service:       service,
					Attributes:    attrs(sp.GetAttributes()),
					Types:         types(sp.GetAttributes()),
					Error:         sp.GetStatus().GetCode() == 2, // STATUS_CODE_ERROR
					StatusMessage: sp.GetStatus().GetMessage(),
					Start:         time.Unix(0, int64(sp.GetStartTimeUnixNano())),
					End:           time.Unix(0, int64(sp.GetEndTimeUnixNano())),
				}
				if p := sp.GetParentSpanId(); len(p) > 0 {
					span.ParentSpanID = hex.EncodeToString(p)
				}
				for _, l := range sp.GetLinks() {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, span)
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.posts++
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func kindName(k int32) string {
	switch k {
	case 1:
		return "INTERNAL"
	case 2:
		return "SERVER"
	case 3:
		return "CLIENT"
	case 4:
		return "PRODUCER"
	case 5:
		return "CONSUMER"
	}
	return "UNSPECIFIED"
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
		case *commonpb.AnyValue_ArrayValue:
			var elems []any
			for _, e := range v.ArrayValue.GetValues() {
				elems = append(elems, attrs([]*commonpb.KeyValue{{Key: "v", Value: e}})["v"])
			}
			b, _ := json.Marshal(elems)
			m[kv.GetKey()] = string(b)
		default:
			m[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return m
}

func types(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = "string"
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = "int"
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = "bool"
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = "double"
		case *commonpb.AnyValue_ArrayValue:
			m[kv.GetKey()] = "array"
		case *commonpb.AnyValue_KvlistValue:
			m[kv.GetKey()] = "kvlist"
		case *commonpb.AnyValue_BytesValue:
			m[kv.GetKey()] = "bytes"
		}
	}
	return m
}

// Tree is the spans of received traces indexed for questions about their
// shape.
type Tree struct {
	byID map[string]Span
}

// NewTree indexes spans.
func NewTree(spans []Span) Tree {
	t := Tree{byID: make(map[string]Span, len(spans))}
	for _, sp := range spans {
		t.byID[sp.SpanID] = sp
	}
	return t
}

// Under reports whether span descends from the span ancestorID (through
// parents received so far).
func (t Tree) Under(span Span, ancestorID string) bool {
	for seen := 0; span.ParentSpanID != "" && seen < 1000; seen++ {
		if span.ParentSpanID == ancestorID {
			return true
		}
		parent, ok := t.byID[span.ParentSpanID]
		if !ok {
			return false
		}
		span = parent
	}
	return false
}
