package scm_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/github"
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

// txUndo is how to undo what one transaction changed.
type txUndo struct{ undo []func() }

type enqueued struct {
	args ports.JobArgs
	opts ports.EnqueueOptions
	inTx bool
	tx   *txUndo // the transaction that enqueued it, or nil
}

// txOf returns the transaction ctx carries, or nil.
func txOf(ctx context.Context) *txUndo {
	tx, _ := ctx.Value(txKey{}).(*txUndo)
	return tx
}

type sealCall struct{ plaintext, aad string }

type finish struct {
	id, status, errMsg string
	at                 time.Time
}

// mem is the state behind the store, cipher and queue mocks: the tests read
// what was stored.
type mem struct {
	mu         sync.Mutex
	states     map[string]ports.OAuthState
	conns      map[string]ports.SCMConnection // by id
	repos      map[string]ports.Repository    // by id
	deliveries map[string]ports.WebhookDelivery
	digests    map[string]ports.WebhookDigest
	claims     []time.Time // the since of each ClaimWebhookDigests call
	activity   []ports.SCMActivity
	jobs       []enqueued
	seals      []sealCall
	opens      []sealCall
	finishes   []finish
	broken     []string // connection ids, in the order marked
	recordInTx bool
	nestedTx   bool // WithinTx was called with a transaction in ctx
	// recordErr, enqueueErr, appendErr and finishErr, when set, fail the
	// next call.
	recordErr, enqueueErr, appendErr, finishErr error
	// poisoned fails every RecordDeliveries call with a delivery of an id
	// it holds, with its error.
	poisoned map[string]error
	// recorded and enqueuedIDs are the delivery ids of each
	// RecordDeliveries call and the jobs' delivery ids of each EnqueueMany
	// call, failed calls included.
	recorded, enqueuedIDs [][]string
	// beforeRecord, when set, runs at the start of each RecordDeliveries
	// call, without mu held: tests block writes with it.
	beforeRecord func(ctx context.Context, ds []ports.WebhookDelivery)
}

// onRollback records how to undo a change made in a transaction.
func (m *mem) onRollback(ctx context.Context, undo func()) {
	if tx, ok := ctx.Value(txKey{}).(*txUndo); ok {
		tx.undo = append(tx.undo, undo)
	}
}

func (m *mem) connOf(o ports.Owner) (ports.SCMConnection, bool) {
	for _, c := range m.conns {
		if c.OrgID == o.OrgID && c.UserID == o.UserID {
			return c, true
		}
	}
	return ports.SCMConnection{}, false
}

// take returns the error in *p, clearing it.
func take(p *error) error {
	err := *p
	*p = nil
	return err
}

// paginate cuts list at the index cursor, in pages of the limit.
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

type env struct {
	t     testing.TB
	svc   *scm.Service
	prov  *mocks.MockSCMProvider
	clock *fixture.Clock
	ids   *fixture.IDs
	m     *mem
	deps  scm.Deps
	// bindings are the browser bindings Authorize gave, by state.
	bindings sync.Map
}

func newEnv(t testing.TB, cfg scm.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := &env{t: t, prov: mocks.NewMockSCMProvider(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{},
		m: &mem{states: map[string]ports.OAuthState{}, conns: map[string]ports.SCMConnection{},
			repos: map[string]ports.Repository{}, deliveries: map[string]ports.WebhookDelivery{},
			digests: map[string]ports.WebhookDigest{}}}
	m := e.m
	store := mocks.NewMockSCMStore(ctrl)
	cipher := mocks.NewMockCipher(ctrl)
	tx := mocks.NewMockTransactor(ctrl)
	jobs := mocks.NewMockJobQueue(ctrl)

	// Transactions roll back on error, as the port promises.
	tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error {
			if inTx(ctx) {
				m.mu.Lock()
				m.nestedTx = true
				m.mu.Unlock()
			}
			tx := &txUndo{}
			err := fn(context.WithValue(ctx, txKey{}, tx))
			m.mu.Lock()
			defer m.mu.Unlock()
			if err != nil {
				for _, undo := range slices.Backward(tx.undo) {
					undo()
				}
			}
			return err
		})
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := take(&m.enqueueErr); err != nil {
				return err
			}
			tx := txOf(ctx)
			m.jobs = append(m.jobs, enqueued{args: args, opts: opts, inTx: inTx(ctx), tx: tx})
			m.onRollback(ctx, func() { m.jobs = slices.DeleteFunc(m.jobs, func(j enqueued) bool { return j.tx == tx }) })
			return nil
		})
	jobs.EXPECT().EnqueueMany(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args []ports.JobArgs, opts ports.EnqueueOptions) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			var ids []string
			for _, a := range args {
				if p, ok := a.(scm.ProcessDeliveryArgs); ok {
					ids = append(ids, p.DeliveryID)
				}
			}
			m.enqueuedIDs = append(m.enqueuedIDs, ids)
			if err := take(&m.enqueueErr); err != nil {
				return err
			}
			tx := txOf(ctx)
			for _, a := range args {
				m.jobs = append(m.jobs, enqueued{args: a, opts: opts, inTx: inTx(ctx), tx: tx})
			}
			m.onRollback(ctx, func() { m.jobs = slices.DeleteFunc(m.jobs, func(j enqueued) bool { return j.tx == tx }) })
			return nil
		})

	store.EXPECT().CreateOAuthState(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.OAuthState) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.states[s.State] = s
			return nil
		})
	store.EXPECT().ConsumeOAuthState(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, state string, now time.Time) (ports.OAuthState, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			s, ok := m.states[state]
			if !ok {
				return ports.OAuthState{}, ports.NotFound("oauth state", "")
			}
			delete(m.states, state)
			if !now.Before(s.ExpiresAt) {
				return ports.OAuthState{}, &ports.Error{Kind: ports.KindGone, Code: "expired", Message: "expired"}
			}
			return s, nil
		})
	store.EXPECT().SaveConnection(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, c ports.SCMConnection) (ports.SCMConnection, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if old, ok := m.connOf(ports.Owner{OrgID: c.OrgID, UserID: c.UserID}); ok {
				c.ID, c.CreatedAt = old.ID, old.CreatedAt
			}
			m.conns[c.ID] = c
			return c, nil
		})
	store.EXPECT().GetConnection(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, provider string) (ports.SCMConnection, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if c, ok := m.connOf(o); ok && c.Provider == provider {
				return c, nil
			}
			return ports.SCMConnection{}, ports.NotFound("connection", provider)
		})
	store.EXPECT().MarkConnectionBroken(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, id, reason string, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			c, ok := m.conns[id]
			if !ok {
				return ports.NotFound("connection", id)
			}
			c.Status, c.Error, c.UpdatedAt = ports.SCMBroken, reason, at
			m.conns[id] = c
			m.broken = append(m.broken, id)
			return nil
		})
	store.EXPECT().SaveRepositories(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, connID string, repos []ports.Repository, at time.Time) ([]ports.Repository, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			out := make([]ports.Repository, 0, len(repos))
			for _, r := range repos {
				for _, old := range m.repos {
					if old.ConnectionID == connID && old.ProviderID == r.ProviderID {
						r.ID, r.CreatedAt = old.ID, old.CreatedAt
					}
				}
				r.ConnectionID, r.UpdatedAt = connID, at
				m.repos[r.ID] = r
				out = append(out, r)
			}
			return out, nil
		})
	store.EXPECT().PruneRepositories(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, connID string, before time.Time) (int, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			n := 0
			for id, r := range m.repos {
				if r.ConnectionID == connID && r.UpdatedAt.Before(before) {
					delete(m.repos, id)
					n++
				}
			}
			return n, nil
		})
	store.EXPECT().ListRepositories(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, page ports.Page) ([]ports.Repository, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.Repository
			for _, r := range m.repos {
				if r.OrgID == o.OrgID && r.UserID == o.UserID {
					out = append(out, r)
				}
			}
			slices.SortFunc(out, func(a, b ports.Repository) int { return strings.Compare(a.FullName, b.FullName) })
			return paginate(out, page)
		})
	store.EXPECT().GetRepository(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.Repository, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if r, ok := m.repos[id]; ok && r.OrgID == o.OrgID && r.UserID == o.UserID {
				return r, nil
			}
			return ports.Repository{}, ports.NotFound("repository", id)
		})
	store.EXPECT().RecordDeliveries(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
			m.mu.Lock()
			hook := m.beforeRecord
			m.mu.Unlock()
			if hook != nil {
				hook(ctx, ds)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.recordInTx = inTx(ctx)
			ids := make([]string, len(ds))
			for i, d := range ds {
				ids[i] = d.ID
			}
			m.recorded = append(m.recorded, ids)
			if err := take(&m.recordErr); err != nil {
				return nil, err
			}
			for _, d := range ds {
				if err := m.poisoned[d.ID]; err != nil {
					return nil, err
				}
			}
			stored := make([]bool, len(ds))
			for i, d := range ds {
				if _, ok := m.deliveries[d.ID]; ok {
					continue
				}
				stored[i] = true
				m.deliveries[d.ID] = d
				m.onRollback(ctx, func() { delete(m.deliveries, d.ID) })
			}
			return stored, nil
		})
	store.EXPECT().ClaimWebhookDigests(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, ds []ports.WebhookDigest, since time.Time) ([]bool, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.claims = append(m.claims, since)
			claimed := make([]bool, len(ds))
			for i, d := range ds {
				if old, ok := m.digests[d.Digest]; ok && !old.At.Before(since) {
					continue
				}
				old, had := m.digests[d.Digest]
				claimed[i] = true
				m.digests[d.Digest] = d
				m.onRollback(ctx, func() {
					if had {
						m.digests[d.Digest] = old
					} else {
						delete(m.digests, d.Digest)
					}
				})
			}
			return claimed, nil
		})
	store.EXPECT().GetDelivery(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, id string) (ports.WebhookDelivery, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if d, ok := m.deliveries[id]; ok {
				return d, nil
			}
			return ports.WebhookDelivery{}, ports.NotFound("webhook delivery", id)
		})
	store.EXPECT().FinishDelivery(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, id, status, errMsg string, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := take(&m.finishErr); err != nil {
				return err
			}
			d, ok := m.deliveries[id]
			if !ok {
				return ports.NotFound("webhook delivery", id)
			}
			d.Status, d.Error, d.ProcessedAt = status, errMsg, &at
			m.deliveries[id] = d
			m.finishes = append(m.finishes, finish{id, status, errMsg, at})
			return nil
		})
	store.EXPECT().AppendActivity(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, entries ...ports.SCMActivity) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := take(&m.appendErr); err != nil {
				return err
			}
			for _, a := range entries {
				if !slices.ContainsFunc(m.activity, func(b ports.SCMActivity) bool { return b.ID == a.ID }) {
					m.activity = append(m.activity, a)
				}
			}
			return nil
		})
	store.EXPECT().ListActivity(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, repoID int64, page ports.Page) ([]ports.SCMActivity, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.SCMActivity
			for _, a := range m.activity {
				if a.RepoID == repoID {
					out = append(out, a)
				}
			}
			slices.SortStableFunc(out, func(a, b ports.SCMActivity) int { return b.At.Compare(a.At) })
			return paginate(out, page)
		})

	// The cipher "seals" as sealed:<hex aad>:<hex plaintext>, and opens only
	// with the same aad.
	cipher.EXPECT().Seal(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(plaintext, aad []byte) (string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.seals = append(m.seals, sealCall{string(plaintext), string(aad)})
			return seal(string(plaintext), string(aad)), nil
		})
	cipher.EXPECT().Open(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(sealed string, aad []byte) ([]byte, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.opens = append(m.opens, sealCall{sealed, string(aad)})
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
	e.deps = scm.Deps{Store: store, Provider: e.prov, Webhooks: github.Webhooks{}, Cipher: cipher, Jobs: jobs, Tx: tx, Clock: e.clock, IDs: e.ids}
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
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	now := e.clock.Now()
	c := ports.SCMConnection{ID: e.ids.NewID(), OrgID: p.OrgID, UserID: p.UserID, Provider: "github", Login: p.UserID,
		Status: ports.SCMActive, CreatedAt: now, UpdatedAt: now}
	c.SealedToken = seal(token, c.ID)
	e.m.conns[c.ID] = c
	var ids []string
	for _, r := range repos {
		id := e.ids.NewID()
		e.m.repos[id] = ports.Repository{ID: id, OrgID: p.OrgID, UserID: p.UserID, ConnectionID: c.ID, SCMRepo: r, CreatedAt: now, UpdatedAt: now}
		ids = append(ids, id)
	}
	return ids
}

func (e *env) conn(p ports.Principal) ports.SCMConnection {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	c, _ := e.m.connOf(p.Owner())
	return c
}

func (e *env) jobs() []enqueued {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.jobs)
}

func (e *env) delivery(id string) (ports.WebhookDelivery, bool) {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	d, ok := e.m.deliveries[id]
	return d, ok
}

func (e *env) activity() []ports.SCMActivity {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.activity)
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
