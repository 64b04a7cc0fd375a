package scm_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	bob   = ports.Principal{UserID: "user-bob", OrgID: "org-1", Role: ports.RoleMember}
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

const (
	publicURL   = "https://devpilot.example.com"
	callbackURL = publicURL + "/scm-oauth/callback"
	secret      = "It's a Secret to Everybody"
)

type txKey struct{}

func inTx(ctx context.Context) bool { return ctx.Value(txKey{}) != nil }

// txMark marks the contexts of one transaction.
type txMark struct{ _ byte }

type enqueued struct {
	args ports.JobArgs
	opts ports.EnqueueOptions
	inTx bool
	tx   *txMark // the transaction that enqueued it, or nil
}

type sealCall struct{ plaintext, aad string }

// take returns the error in *p, clearing it.
func take(p *error) error {
	err := *p
	*p = nil
	return err
}

// paginate cuts list at the index cursor, in pages of the limit, as the
// provider mock pages.
func paginate[T any](list []T, page ports.Page) ([]T, string, error) {
	from := 0
	if page.Cursor != "" {
		n, err := strconv.Atoi(page.Cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, "", ports.Invalid("bad cursor", ports.FieldError{Field: "cursor", Reason: "unknown"})
		}
		from = n
	}
	to := min(from+page.Limit, len(list))
	next := ""
	if to < len(list) {
		next = strconv.Itoa(to)
	}
	return list[from:to], next, nil
}

// faultySCM is the store's SCMStore with faults to inject, noting the calls
// the tests observe.
type faultySCM struct {
	ports.SCMStore
	mu sync.Mutex
	// recordErr, getErr, appendErr and finishErr, when set, fail the next
	// call (finishErr: of FinishDelivery or FinishDeliveries).
	recordErr, getErr, appendErr, finishErr error
	// poisoned fails every RecordDeliveries call with a delivery of an id
	// it holds, with its error.
	poisoned map[string]error
	// beforeRecord, when set, runs at the start of each RecordDeliveries
	// call: tests block writes with it.
	beforeRecord func(ctx context.Context, ds []ports.WebhookDelivery)
	// disconnected makes GetConnection find none, as after a disconnect.
	disconnected bool
	recordInTx   bool
	// recorded are the delivery ids of each RecordDeliveries call, failed
	// calls included.
	recorded   [][]string
	claims     []time.Time // the since of each ClaimWebhookDigests call
	states     int         // the states created
	repoIDs    map[int64]bool
	finishes   int      // deliveries finished
	finishInTx bool     // the last FinishDeliveries call ran in a transaction
	broken     []string // connection ids, in the order marked
}

func (f *faultySCM) CreateOAuthState(ctx context.Context, st ports.OAuthState) error {
	err := f.SCMStore.CreateOAuthState(ctx, st)
	if err == nil {
		f.mu.Lock()
		f.states++
		f.mu.Unlock()
	}
	return err
}

func (f *faultySCM) GetConnection(ctx context.Context, o ports.Owner, provider string) (ports.SCMConnection, error) {
	f.mu.Lock()
	gone := f.disconnected
	f.mu.Unlock()
	if gone {
		return ports.SCMConnection{}, ports.NotFound("scm connection to", provider)
	}
	return f.SCMStore.GetConnection(ctx, o, provider)
}

func (f *faultySCM) MarkConnectionBroken(ctx context.Context, id, reason string, at time.Time) error {
	err := f.SCMStore.MarkConnectionBroken(ctx, id, reason, at)
	if err == nil {
		f.mu.Lock()
		f.broken = append(f.broken, id)
		f.mu.Unlock()
	}
	return err
}

func (f *faultySCM) RecordDeliveries(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
	f.mu.Lock()
	hook := f.beforeRecord
	f.mu.Unlock()
	if hook != nil {
		hook(ctx, ds)
	}
	f.mu.Lock()
	f.recordInTx = inTx(ctx)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	f.recorded = append(f.recorded, ids)
	err := take(&f.recordErr)
	for _, d := range ds {
		if err == nil {
			err = f.poisoned[d.ID]
		}
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.SCMStore.RecordDeliveries(ctx, ds)
}

func (f *faultySCM) ClaimWebhookDigests(ctx context.Context, ds []ports.WebhookDigest, since time.Time) ([]bool, error) {
	f.mu.Lock()
	f.claims = append(f.claims, since)
	f.mu.Unlock()
	return f.SCMStore.ClaimWebhookDigests(ctx, ds, since)
}

func (f *faultySCM) FinishDelivery(ctx context.Context, id, status, errMsg string, at time.Time) error {
	f.mu.Lock()
	err := take(&f.finishErr)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.SCMStore.FinishDelivery(ctx, id, status, errMsg, at); err != nil {
		return err
	}
	f.mu.Lock()
	f.finishes++
	f.mu.Unlock()
	return nil
}

func (f *faultySCM) GetDeliveries(ctx context.Context, ids []string) ([]ports.WebhookDelivery, error) {
	f.mu.Lock()
	err := take(&f.getErr)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.SCMStore.GetDeliveries(ctx, ids)
}

func (f *faultySCM) FinishDeliveries(ctx context.Context, fs []ports.DeliveryFinish, at time.Time) error {
	f.mu.Lock()
	err := take(&f.finishErr)
	f.finishInTx = inTx(ctx)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.SCMStore.FinishDeliveries(ctx, fs, at); err != nil {
		return err
	}
	f.mu.Lock()
	f.finishes += len(fs)
	f.mu.Unlock()
	return nil
}

func (f *faultySCM) AppendActivity(ctx context.Context, entries ...ports.SCMActivity) error {
	f.mu.Lock()
	err := take(&f.appendErr)
	for _, a := range entries {
		f.repoIDs[a.RepoID] = true
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.SCMStore.AppendActivity(ctx, entries...)
}

// marked is the store's Transactor marking the contexts of its
// transactions; it notes a transaction begun in another's context and drops
// the jobs of a transaction rolled back, as the queue's port promises.
type marked struct {
	ports.Transactor
	e *env
}

func (m marked) WithinTx(ctx context.Context, fn func(context.Context) error) error {
	e := m.e
	if inTx(ctx) {
		e.mu.Lock()
		e.nestedTx = true
		e.mu.Unlock()
	}
	tx := &txMark{}
	err := m.Transactor.WithinTx(ctx, func(ctx context.Context) error { return fn(context.WithValue(ctx, txKey{}, tx)) })
	if err != nil {
		e.mu.Lock()
		e.queued = slices.DeleteFunc(e.queued, func(j enqueued) bool { return j.tx == tx })
		e.mu.Unlock()
	}
	return err
}

type env struct {
	t     testing.TB
	svc   *scm.Service
	prov  *mocks.MockSCMProvider
	clock *fixture.Clock
	ids   *fixture.IDs
	store *memstore.Store
	scm   *faultySCM
	deps  scm.Deps
	// bindings are the browser bindings Authorize gave, by state.
	bindings sync.Map

	mu           sync.Mutex
	queued       []enqueued
	seals, opens []sealCall
	nestedTx     bool // WithinTx was called with a transaction in ctx
	// enqueueErr, when set, fails the next call.
	enqueueErr error
	// enqueuedIDs are the delivery ids of each delivery job enqueued,
	// failed calls included.
	enqueuedIDs [][]string
}

// newEnv wires a Service to a memstore holding alice and bob, a provider
// mock, a queue recording its jobs and a cipher that seals visibly.
func newEnv(t testing.TB, cfg scm.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	store := memstore.New()
	e := &env{t: t, prov: mocks.NewMockSCMProvider(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{}, store: store,
		scm: &faultySCM{SCMStore: store, repoIDs: map[int64]bool{}}}
	if err := store.CreateOrg(t.Context(), ports.Org{ID: "org-1", Name: "org-1"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []ports.Principal{alice, bob} {
		if err := store.CreateUser(t.Context(), ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@example.com", Role: p.Role}); err != nil {
			t.Fatal(err)
		}
	}
	cipher := mocks.NewMockCipher(ctrl)
	jobs := mocks.NewMockJobQueue(ctrl)
	record := func(ctx context.Context, args []ports.JobArgs, opts ports.EnqueueOptions) error {
		for _, a := range args {
			switch p := a.(type) {
			case scm.ProcessDeliveriesArgs:
				e.enqueuedIDs = append(e.enqueuedIDs, slices.Clone(p.DeliveryIDs))
			case scm.ProcessDeliveryArgs:
				e.enqueuedIDs = append(e.enqueuedIDs, []string{p.DeliveryID})
			}
		}
		if err := take(&e.enqueueErr); err != nil {
			return err
		}
		tx, _ := ctx.Value(txKey{}).(*txMark)
		for _, a := range args {
			e.queued = append(e.queued, enqueued{args: a, opts: opts, inTx: inTx(ctx), tx: tx})
		}
		return nil
	}
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			return record(ctx, []ports.JobArgs{args}, opts)
		})
	jobs.EXPECT().EnqueueMany(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args []ports.JobArgs, opts ports.EnqueueOptions) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			return record(ctx, args, opts)
		})

	// The cipher "seals" as sealed:<hex aad>:<hex plaintext>, and opens only
	// with the same aad.
	cipher.EXPECT().Seal(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(plaintext, aad []byte) (string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.seals = append(e.seals, sealCall{string(plaintext), string(aad)})
			return seal(string(plaintext), string(aad)), nil
		})
	cipher.EXPECT().Open(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(sealed string, aad []byte) ([]byte, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.opens = append(e.opens, sealCall{sealed, string(aad)})
			parts := strings.Split(sealed, ":")
			if len(parts) != 3 || parts[0] != "sealed" || parts[1] != hex.EncodeToString(aad) {
				return nil, ports.Wrap(ports.KindInternal, errors.New("message authentication failed"), "cannot open")
			}
			return hex.DecodeString(parts[2])
		})

	if cfg.PublicURL == "" {
		cfg.PublicURL = publicURL
	}
	if cfg.WebhookSecret == nil {
		cfg.WebhookSecret = []byte(secret)
	}
	// Webhooks are read by the GitHub adapter itself: it needs nothing but
	// the bytes, and the tests then send what GitHub sends.
	e.deps = scm.Deps{Store: e.scm, Provider: e.prov, Webhooks: github.Webhooks{}, Cipher: cipher, Jobs: jobs, Tx: marked{store, e}, Clock: e.clock, IDs: e.ids}
	e.svc = scm.New(cfg, e.deps)
	return e
}

// depsOf returns the env's ports with another source of randomness.
func depsOf(e *env, random io.Reader) scm.Deps {
	d := e.deps
	d.Random = random
	return d
}

func seal(plaintext, aad string) string {
	return "sealed:" + hex.EncodeToString([]byte(aad)) + ":" + hex.EncodeToString([]byte(plaintext))
}

// seed connects p with the token and records the repositories as the
// callback would, without the OAuth flow; it returns their devpilot ids.
func (e *env) seed(p ports.Principal, token string, repos ...ports.SCMRepo) []string {
	e.t.Helper()
	ctx, now, id := e.t.Context(), e.clock.Now(), e.ids.NewID()
	c, err := e.store.SaveConnection(ctx, ports.SCMConnection{ID: id, OrgID: p.OrgID, UserID: p.UserID, Provider: "github", Login: p.UserID,
		SealedToken: seal(token, id), Status: ports.SCMActive, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		e.t.Fatal(err)
	}
	rs := make([]ports.Repository, len(repos))
	for i, r := range repos {
		rs[i] = ports.Repository{ID: e.ids.NewID(), SCMRepo: r}
	}
	saved, err := e.store.SaveRepositories(ctx, c.ID, rs, now)
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, r := range saved {
		ids = append(ids, r.ID)
	}
	return ids
}

// conn returns p's stored connection; the zero one when there is none.
func (e *env) conn(p ports.Principal) ports.SCMConnection {
	c, _ := e.store.GetConnection(e.t.Context(), p.Owner(), "github")
	return c
}

// conns returns the stored connections of alice and bob.
func (e *env) conns() []ports.SCMConnection {
	var out []ports.SCMConnection
	for _, p := range []ports.Principal{alice, bob} {
		if c := e.conn(p); c.ID != "" {
			out = append(out, c)
		}
	}
	return out
}

func (e *env) jobs() []enqueued {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.queued)
}

func (e *env) delivery(id string) (ports.WebhookDelivery, bool) {
	d, err := e.store.GetDelivery(e.t.Context(), id)
	return d, err == nil
}

// activity returns the stored activity of every repository activity was
// appended for.
func (e *env) activity() []ports.SCMActivity {
	e.t.Helper()
	e.scm.mu.Lock()
	repos := slices.Sorted(maps.Keys(e.scm.repoIDs))
	e.scm.mu.Unlock()
	var out []ports.SCMActivity
	for _, id := range repos {
		list, _, err := e.store.ListActivity(e.t.Context(), id, ports.Page{Limit: ports.MaxPageLimit})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

// state reads a stored state through the port: it consumes it (at the zero
// time, so that it has not expired) and stores it again.
func (e *env) state(state string) (ports.OAuthState, bool) {
	e.t.Helper()
	st, err := e.store.ConsumeOAuthState(e.t.Context(), state, time.Time{})
	if err != nil {
		return ports.OAuthState{}, false
	}
	if err := e.store.CreateOAuthState(e.t.Context(), st); err != nil {
		e.t.Fatal(err)
	}
	return st, true
}

// statesCreated returns how many states the service stored.
func (e *env) statesCreated() int {
	e.scm.mu.Lock()
	defer e.scm.mu.Unlock()
	return e.scm.states
}

// wantErr fails unless err is a ports.Error of the kind (and code, when
// given).
func wantErr(t *testing.T, what string, err error, kind ports.Kind, code string) *ports.Error {
	t.Helper()
	pe, ok := ports.AsError(err)
	if !ok || pe.Kind != kind || (code != "" && pe.ErrorCode() != code) {
		t.Errorf("%s: error %v (%T), want %s %s", what, err, err, kind, code)
		return &ports.Error{}
	}
	return pe
}

func fieldsOf(err error) []string {
	pe, ok := ports.AsError(err)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range pe.Fields {
		out = append(out, f.Field)
	}
	return out
}

var (
	webRepo = ports.SCMRepo{ProviderID: 101, FullName: "acme/web", Owner: "acme", Name: "web", DefaultBranch: "main",
		HTMLURL: "https://github.com/acme/web", Description: "The website"}
	apiRepo = ports.SCMRepo{ProviderID: 102, FullName: "acme/api", Owner: "acme", Name: "api", DefaultBranch: "main",
		HTMLURL: "https://github.com/acme/api", Private: true}
)
