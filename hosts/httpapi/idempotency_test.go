package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

const bobToken = "dp_bob"

var bob = ports.Principal{UserID: "u-bob", OrgID: "o-acme", Role: ports.RoleMember, TokenID: "t-2"}

// twoUsers knows goodToken (alice) and bobToken (bob).
type twoUsers struct{ fakeIdentity }

func (f *twoUsers) Authenticate(ctx context.Context, token string) (ports.Principal, error) {
	if token == bobToken {
		return bob, nil
	}
	return f.fakeIdentity.Authenticate(ctx, token)
}

// idemEnv is a server whose Idempotency store is SQLite, with alice and bob
// as users, and a few test routes counting their calls.
type idemEnv struct {
	*env
	db    *sqlstore.DB
	store *sqlstore.Idempotency
	calls sync.Map // route name → *atomic.Int32
}

func newIdemEnv(t *testing.T) *idemEnv {
	t.Helper()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	ids := sqlstore.NewIdentity(db)
	ctx := t.Context()
	if err := ids.CreateOrg(ctx, ports.Org{ID: alice.OrgID, Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []ports.Principal{alice, bob} {
		if err := ids.CreateUser(ctx, ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@acme.test", Role: p.Role, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	store := sqlstore.NewIdempotency(db)
	e := &idemEnv{db: db, store: store}
	e.env = newEnv(t, withIdentity(&twoUsers{}), func(_ *httpapi.Config, d *httpapi.Deps) {
		d.Idempotency, d.IdempotencySeal = store, newSeal(t)
	})
	return e
}

// count returns the call counter of the named route.
func (e *idemEnv) count(name string) *atomic.Int32 {
	c, _ := e.calls.LoadOrStore(name, new(atomic.Int32))
	return c.(*atomic.Int32)
}

// createRoute registers POST pattern: it decodes {"name"}, counts the call
// and answers 201 with Location and ETag, or 422 for the name "bad".
func (e *idemEnv) createRoute(pattern string, opts ...httpapi.RouteOption) {
	e.srv.HandleForTest(http.MethodPost, pattern, func(w http.ResponseWriter, r *http.Request) error {
		var in struct {
			Name string `json:"name"`
		}
		if err := httpapi.DecodeJSON(w, r, &in); err != nil {
			return err
		}
		n := e.count(pattern).Add(1)
		if in.Name == "bad" {
			return ports.Invalid("name is bad", ports.FieldError{Field: "name", Reason: "bad"})
		}
		w.Header().Set("Location", pattern+"/"+strconv.Itoa(int(n)))
		w.Header().Set("ETag", `"`+strconv.Itoa(int(n))+`"`)
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"name": in.Name, "call": n})
	}, opts...)
}

// newSeal returns a Cipher over a new random key.
func newSeal(t *testing.T) *secretbox.Box {
	t.Helper()
	key, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func idemRequest(method, target, token, key, body string) *http.Request {
	req := request(method, target, token, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req
}

// checkFirst fails unless rr is a first (not replayed) response of status.
func checkFirst(t *testing.T, what string, rr *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rr.Code != status {
		t.Fatalf("%s: status = %d, want %d; body %s", what, rr.Code, status, rr.Body)
	}
	if v := rr.Header().Get("Idempotent-Replayed"); v != "" {
		t.Errorf("%s: Idempotent-Replayed = %q on a first response", what, v)
	}
}

// checkReplay fails unless replay repeats first, marked as replayed.
func checkReplay(t *testing.T, what string, first, replay *httptest.ResponseRecorder) {
	t.Helper()
	if replay.Code != first.Code || replay.Body.String() != first.Body.String() {
		t.Fatalf("%s: replay = %d %s, want %d %s", what, replay.Code, replay.Body, first.Code, first.Body)
	}
	if v := replay.Header().Get("Idempotent-Replayed"); v != "true" {
		t.Errorf("%s: Idempotent-Replayed = %q, want true", what, v)
	}
	for _, h := range []string{"Content-Type", "Location", "ETag", "Content-Length"} {
		if got, want := replay.Header().Get(h), first.Header().Get(h); got != want {
			t.Errorf("%s: replayed %s = %q, want %q", what, h, got, want)
		}
	}
	if id := replay.Header().Get("X-Request-Id"); id == "" || id == first.Header().Get("X-Request-Id") {
		t.Errorf("%s: replay X-Request-Id = %q, want a new one", what, id)
	}
}

func checkCalls(t *testing.T, what string, c *atomic.Int32, want int32) {
	t.Helper()
	if got := c.Load(); got != want {
		t.Errorf("%s: handler ran %d times, want %d", what, got, want)
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	e.createRoute("/test/things")
	calls := e.count("/test/things")

	first := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"a"}`))
	checkFirst(t, "first", first, http.StatusCreated)
	if first.Header().Get("Location") == "" || first.Header().Get("ETag") == "" {
		t.Fatalf("the test route set no Location or ETag: %v", first.Header())
	}
	for i := range 2 {
		replay := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"a"}`))
		checkReplay(t, "retry "+strconv.Itoa(i+1), first, replay)
	}
	checkCalls(t, "same key and body thrice", calls, 1)

	// Another key is another request.
	other := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-2", `{"name":"a"}`))
	checkFirst(t, "another key", other, http.StatusCreated)
	checkCalls(t, "a second key", calls, 2)
}

func TestIdempotencyReusedKey(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	e.createRoute("/test/things")
	e.createRoute("/test/others")
	e.srv.HandleForTest(http.MethodPut, "/test/things", func(w http.ResponseWriter, _ *http.Request) error {
		e.count("PUT /test/things").Add(1)
		return httpapi.WriteJSON(w, http.StatusOK, map[string]string{})
	})
	first := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"a"}`))
	checkFirst(t, "first", first, http.StatusCreated)

	for _, tc := range []struct {
		name, method, target, body string
	}{
		{"different body", http.MethodPost, "/test/things", `{"name":"b"}`},
		{"same JSON, other bytes", http.MethodPost, "/test/things", `{"name": "a"}`},
		{"different route", http.MethodPost, "/test/others", `{"name":"a"}`},
		{"different method", http.MethodPut, "/test/things", `{"name":"a"}`},
		{"different query", http.MethodPost, "/test/things?x=1", `{"name":"a"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := problemOf(t, e.do(idemRequest(tc.method, tc.target, goodToken, "key-1", tc.body)), http.StatusUnprocessableEntity)
			if p.Code != "idempotency_key_reused" {
				t.Errorf("code = %q, want idempotency_key_reused", p.Code)
			}
		})
	}
	checkCalls(t, "POST /test/things", e.count("/test/things"), 1)
	checkCalls(t, "POST /test/others", e.count("/test/others"), 0)
	checkCalls(t, "PUT /test/things", e.count("PUT /test/things"), 0)
	// The first request's response is still replayed.
	checkReplay(t, "after the refusals", first, e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"a"}`)))
}

func TestIdempotencyInFlight(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	e.srv.HandleForTest(http.MethodPost, "/test/slow", func(w http.ResponseWriter, _ *http.Request) error {
		calls.Add(1)
		close(started)
		<-release
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]string{"done": "yes"})
	})
	firstDone := make(chan *httptest.ResponseRecorder)
	go func() { firstDone <- e.do(idemRequest(http.MethodPost, "/test/slow", goodToken, "key-1", `{}`)) }()
	<-started

	rr := e.do(idemRequest(http.MethodPost, "/test/slow", goodToken, "key-1", `{}`))
	if p := problemOf(t, rr, http.StatusConflict); p.Code != "idempotency_key_in_use" {
		t.Errorf("code = %q, want idempotency_key_in_use", p.Code)
	}
	if ra := rr.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1", ra)
	}
	// A different request with the key is refused as reused, in flight or not.
	if p := problemOf(t, e.do(idemRequest(http.MethodPost, "/test/slow", goodToken, "key-1", `{"x":1}`)), 422); p.Code != "idempotency_key_reused" {
		t.Errorf("different body in flight: code = %q", p.Code)
	}

	close(release)
	first := <-firstDone
	checkFirst(t, "first", first, http.StatusCreated)
	checkReplay(t, "after the first finished", first, e.do(idemRequest(http.MethodPost, "/test/slow", goodToken, "key-1", `{}`)))
	checkCalls(t, "in flight", &calls, 1)
}

func TestIdempotencyFailuresNotRemembered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fail   func(w http.ResponseWriter, r *http.Request) error
		status int
	}{
		{"internal error", func(http.ResponseWriter, *http.Request) error { return io.ErrUnexpectedEOF }, 500},
		{"upstream failure", func(http.ResponseWriter, *http.Request) error {
			return &ports.Error{Kind: ports.KindUpstream, Message: "the model failed"}
		}, 502},
		{"unavailable", func(http.ResponseWriter, *http.Request) error {
			return &ports.Error{Kind: ports.KindUnavailable, Message: "try later", RetryAfter: time.Second}
		}, 503},
		{"rate limited", func(http.ResponseWriter, *http.Request) error {
			return &ports.Error{Kind: ports.KindRateLimited, Message: "slow down"}
		}, 429},
		{"panic", func(http.ResponseWriter, *http.Request) error { panic("boom") }, 500},
		{"panic after the status", func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusCreated)
			panic("boom")
		}, -1},
		{"client gone", nil, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newIdemEnv(t)
			var calls atomic.Int32
			ctx, leave := context.WithCancel(t.Context())
			defer leave()
			e.srv.HandleForTest(http.MethodPost, "/test/flaky", func(w http.ResponseWriter, r *http.Request) error {
				if calls.Add(1) == 1 {
					if tc.fail == nil { // the client leaves while the handler runs
						leave()
						return r.Context().Err()
					}
					return tc.fail(w, r)
				}
				return httpapi.WriteJSON(w, http.StatusCreated, map[string]string{"ok": "yes"})
			})
			req := idemRequest(http.MethodPost, "/test/flaky", goodToken, "key-1", `{}`)
			switch tc.status {
			case -1: // the server aborts the response
				func() {
					defer func() {
						if v := recover(); v != http.ErrAbortHandler {
							t.Errorf("recovered %v, want http.ErrAbortHandler", v)
						}
					}()
					e.do(req)
				}()
			case -2:
				if rr := e.do(req.WithContext(ctx)); rr.Body.Len() != 0 {
					t.Errorf("answered a client that left: %d %s", rr.Code, rr.Body)
				}
			default:
				problemOf(t, e.do(req), tc.status)
			}
			checkFirst(t, "retry", e.do(idemRequest(http.MethodPost, "/test/flaky", goodToken, "key-1", `{}`)), http.StatusCreated)
			checkCalls(t, "failure then retry", &calls, 2)
		})
	}
}

func TestIdempotencyRemembersClientErrors(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	e.createRoute("/test/things")
	first := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"bad"}`))
	firstBody := first.Body.String()
	if p := problemOf(t, first, http.StatusUnprocessableEntity); p.Code != "invalid" {
		t.Fatalf("code = %q", p.Code)
	}
	first.Body = bytes.NewBufferString(firstBody) // problemOf read it
	replay := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{"name":"bad"}`))
	checkReplay(t, "a 422", first, replay)
	if got := replay.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("replayed X-Content-Type-Options = %q", got)
	}
	checkCalls(t, "a 422 retried", e.count("/test/things"), 1)
}

func TestIdempotencyIgnoredWhereItDoesNotApply(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	var calls atomic.Int32
	h := func(w http.ResponseWriter, _ *http.Request) error {
		return httpapi.WriteJSON(w, http.StatusOK, map[string]int32{"call": calls.Add(1)})
	}
	e.srv.HandleForTest(http.MethodPost, "/test/stream", h, httpapi.Streaming)
	e.srv.HandleForTest(http.MethodPost, "/test/public", h, httpapi.Public)
	e.srv.HandleForTest(http.MethodGet, "/test/read", h)
	e.createRoute("/test/things")

	for _, tc := range []struct {
		name, method, target, key string
		calls                     *atomic.Int32
	}{
		{"no header", http.MethodPost, "/test/things", "", e.count("/test/things")},
		{"streaming route", http.MethodPost, "/test/stream", "key-1", &calls},
		{"public route", http.MethodPost, "/test/public", "key-2", &calls},
		{"GET", http.MethodGet, "/test/read", "key-3", &calls},
	} {
		before := tc.calls.Load()
		for i := range 2 {
			rr := e.do(idemRequest(tc.method, tc.target, goodToken, tc.key, `{"name":"a"}`))
			if rr.Code >= 300 || rr.Header().Get("Idempotent-Replayed") != "" {
				t.Errorf("%s, call %d: %d %v %s", tc.name, i+1, rr.Code, rr.Header(), rr.Body)
			}
		}
		checkCalls(t, tc.name, tc.calls, before+2)
	}
	// A malformed key on a route where the convention does not apply is not looked at.
	if rr := e.do(idemRequest(http.MethodPost, "/test/stream", goodToken, " ", `{}`)); rr.Code != http.StatusOK {
		t.Errorf("streaming route with a malformed key: %d", rr.Code)
	}
}

func TestIdempotencyWithoutStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls atomic.Int32
	e.srv.HandleForTest(http.MethodPost, "/test/things", func(w http.ResponseWriter, _ *http.Request) error {
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]int32{"call": calls.Add(1)})
	})
	for range 2 {
		checkFirst(t, "no store", e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{}`)), http.StatusCreated)
	}
	checkCalls(t, "no store", &calls, 2)
}

func TestIdempotencyOwners(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	e.createRoute("/test/things")
	calls := e.count("/test/things")
	fromAlice := e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "shared", `{"name":"a"}`))
	checkFirst(t, "alice", fromAlice, http.StatusCreated)
	fromBob := e.do(idemRequest(http.MethodPost, "/test/things", bobToken, "shared", `{"name":"a"}`))
	checkFirst(t, "bob, same key and body", fromBob, http.StatusCreated)
	checkCalls(t, "two users, one key", calls, 2)
	// Bob's body differs from alice's, and is still his own first request.
	checkFirst(t, "bob, other key", e.do(idemRequest(http.MethodPost, "/test/things", bobToken, "bob-only", `{"name":"z"}`)), http.StatusCreated)
	checkReplay(t, "alice again", fromAlice, e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "shared", `{"name":"a"}`)))
	checkReplay(t, "bob again", fromBob, e.do(idemRequest(http.MethodPost, "/test/things", bobToken, "shared", `{"name":"a"}`)))
	checkCalls(t, "after the replays", calls, 3)
}

func TestIdempotencyKeyValidation(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	e.createRoute("/test/things")
	for _, tc := range []struct {
		name string
		keys []string
		ok   bool
	}{
		{"255 characters", []string{strings.Repeat("k", 255)}, true},
		{"punctuation", []string{`a!"#$%&'()*+,-./:;<=>?@[\]^_{|}~z`}, true},
		{"empty", []string{""}, false},
		{"256 characters", []string{strings.Repeat("k", 256)}, false},
		{"space", []string{"a b"}, false},
		{"tab", []string{"a\tb"}, false},
		{"non-ASCII", []string{"clé"}, false},
		{"twice", []string{"a", "b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := idemRequest(http.MethodPost, "/test/things", goodToken, "", `{"name":"a"}`)
			req.Header["Idempotency-Key"] = tc.keys
			rr := e.do(req)
			if tc.ok {
				checkFirst(t, "valid key", rr, http.StatusCreated)
				return
			}
			if p := problemOf(t, rr, http.StatusBadRequest); p.Code != "malformed" || !strings.Contains(p.Detail, "Idempotency-Key") {
				t.Errorf("problem = %+v", p)
			}
		})
	}
	checkCalls(t, "valid keys only", e.count("/test/things"), 2)
}

func TestIdempotencyLargeBodies(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	const limit = 3 << 20
	var uploads atomic.Int32
	// The upload route answers with the size and hash of the body it read.
	e.srv.HandleForTest(http.MethodPost, "/test/upload", func(w http.ResponseWriter, r *http.Request) error {
		uploads.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"size": len(b), "sha256": hex.EncodeToString(sum[:])})
	}, httpapi.MaxBody(limit))
	var downloads atomic.Int32
	e.srv.HandleForTest(http.MethodPost, "/test/big-answer", func(w http.ResponseWriter, _ *http.Request) error {
		downloads.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Location", "/test/big/1")
		w.WriteHeader(http.StatusCreated)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 17 { // 1 MiB + 64 KiB
			_, _ = w.Write(chunk)
		}
		return nil
	})

	body := strings.Repeat("0123456789abcdef", (2<<20)/16) // 2 MiB: spooled to a file
	first := e.do(idemRequest(http.MethodPost, "/test/upload", goodToken, "upload", body))
	checkFirst(t, "large upload", first, http.StatusCreated)
	sum := sha256.Sum256([]byte(body))
	if want := `"sha256":"` + hex.EncodeToString(sum[:]) + `","size":2097152`; !strings.Contains(first.Body.String(), want) {
		t.Fatalf("the handler read another body: %s", first.Body)
	}
	checkReplay(t, "large upload", first, e.do(idemRequest(http.MethodPost, "/test/upload", goodToken, "upload", body)))
	changed := body[:len(body)-1] + "!"
	if p := problemOf(t, e.do(idemRequest(http.MethodPost, "/test/upload", goodToken, "upload", changed)), 422); p.Code != "idempotency_key_reused" {
		t.Errorf("large upload, last byte changed: code %q", p.Code)
	}
	checkCalls(t, "large upload", &uploads, 1)

	tooBig := idemRequest(http.MethodPost, "/test/upload", goodToken, "too-big", strings.Repeat("x", limit+1))
	tooBig.ContentLength = -1 // so the limit is found while reading
	if p := problemOf(t, e.do(tooBig), http.StatusRequestEntityTooLarge); p.Code != "payload_too_large" {
		t.Errorf("over the limit: code %q", p.Code)
	}
	checkCalls(t, "over the limit", &uploads, 1)
	checkFirst(t, "the key of a refused body is free", e.do(idemRequest(http.MethodPost, "/test/upload", goodToken, "too-big", "small")), http.StatusCreated)

	big := e.do(idemRequest(http.MethodPost, "/test/big-answer", goodToken, "big", `{}`))
	checkFirst(t, "large response", big, http.StatusCreated)
	if big.Body.Len() != 17*64<<10 {
		t.Fatalf("large response: %d bytes", big.Body.Len())
	}
	rr := e.do(idemRequest(http.MethodPost, "/test/big-answer", goodToken, "big", `{}`))
	if p := problemOf(t, rr, http.StatusConflict); p.Code != "idempotency_response_too_large" || !strings.Contains(p.Detail, "status 201") {
		t.Errorf("replay of a large response: %+v", p)
	}
	if loc := rr.Header().Get("Location"); loc != "/test/big/1" {
		t.Errorf("replay of a large response: Location = %q", loc)
	}
	checkCalls(t, "large response", &downloads, 1)
}

func TestIdempotencyStoreFailure(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	store := sqlstore.NewIdempotency(db)
	e := newEnv(t, func(_ *httpapi.Config, d *httpapi.Deps) { d.Idempotency, d.IdempotencySeal = store, newSeal(t) })
	var calls atomic.Int32
	e.srv.HandleForTest(http.MethodPost, "/test/things", func(w http.ResponseWriter, _ *http.Request) error {
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]int32{"call": calls.Add(1)})
	})
	// alice is no user of this database, so Begin is not_found; the request is
	// refused rather than run without its key.
	if p := problemOf(t, e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{}`)), http.StatusNotFound); p.Code != "not_found" {
		t.Errorf("code = %q", p.Code)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	problemOf(t, e.do(idemRequest(http.MethodPost, "/test/things", goodToken, "key-1", `{}`)), http.StatusInternalServerError)
	checkCalls(t, "store failures", &calls, 0)
}

// A kept response is sealed: its secret is nowhere in the store, a retry
// still gets it, and a body copied from another record, or one kept in
// plain text before bodies were sealed, is not replayed but refused with
// 409 idempotency_replay_unavailable.
func TestIdempotencySealsKeptResponses(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t)
	const secret = "dp_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
	var calls atomic.Int32
	e.srv.HandleForTest(http.MethodPost, "/test/tokens", func(w http.ResponseWriter, r *http.Request) error {
		var in struct {
			Name string `json:"name"`
		}
		if err := httpapi.DecodeJSON(w, r, &in); err != nil {
			return err
		}
		calls.Add(1)
		return httpapi.WriteJSON(w, http.StatusCreated, map[string]string{"name": in.Name, "token": secret + in.Name})
	})
	ctx := t.Context()
	bodies := func() map[string][]byte {
		t.Helper()
		rows, err := e.db.Writer.QueryContext(ctx, "SELECT idempotency_key, body FROM idempotency_keys")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]byte{}
		for rows.Next() {
			var key string
			var body []byte
			if err := rows.Scan(&key, &body); err != nil {
				t.Fatal(err)
			}
			out[key] = body
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}

	first := e.do(idemRequest(http.MethodPost, "/test/tokens", goodToken, "key-a", `{"name":"a"}`))
	checkFirst(t, "first", first, http.StatusCreated)
	other := e.do(idemRequest(http.MethodPost, "/test/tokens", goodToken, "key-b", `{"name":"b"}`))
	checkFirst(t, "another key", other, http.StatusCreated)
	kept := bodies()
	for key, body := range kept {
		if len(body) == 0 || bytes.Contains(body, []byte(secret)) || bytes.Contains(body, []byte(`"token"`)) {
			t.Fatalf("key %s keeps its response in plain text: %q", key, body)
		}
	}
	checkReplay(t, "retry", first, e.do(idemRequest(http.MethodPost, "/test/tokens", goodToken, "key-a", `{"name":"a"}`)))
	checkCalls(t, "before the swaps", &calls, 2)

	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"another record's body", kept["key-a"]},
		{"a plain body", []byte(`{"name":"b","token":"` + secret + `b"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.db.Writer.ExecContext(ctx, "UPDATE idempotency_keys SET body = ? WHERE idempotency_key = ?", tc.body, "key-b"); err != nil {
				t.Fatal(err)
			}
			rr := e.do(idemRequest(http.MethodPost, "/test/tokens", goodToken, "key-b", `{"name":"b"}`))
			if p := problemOf(t, rr, http.StatusConflict); p.Code != "idempotency_replay_unavailable" || strings.Contains(rr.Body.String(), secret) {
				t.Errorf("replay: %d %s, want 409 idempotency_replay_unavailable", rr.Code, rr.Body)
			}
		})
	}
	checkCalls(t, "after the swaps", &calls, 2)
}

// An Idempotency store without the Cipher that seals its bodies is a wiring
// bug New refuses.
func TestIdempotencyNeedsASeal(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "IdempotencySeal") {
			t.Errorf("New without IdempotencySeal: recovered %v, want a panic naming it", r)
		}
	}()
	httpapi.New(httpapi.Config{}, httpapi.Deps{Identity: &twoUsers{}, Ready: fakeReady{}, Idempotency: sqlstore.NewIdempotency(nil)})
}
