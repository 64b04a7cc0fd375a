package content_test

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	bob   = ports.Principal{UserID: "user-bob", OrgID: "org-1", Role: ports.RoleMember}
	olga  = ports.Principal{UserID: "user-olga", OrgID: "org-2", Role: ports.RoleAdmin}
)

const (
	project = "web-site"
	absent  = "00000000-0000-7000-8000-0000000000ff"
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

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

// faultyContent is the store's ContentStore with faults to inject; it
// checks that ids that are not UUIDs never reach the store.
type faultyContent struct {
	ports.ContentStore
	t  *testing.T
	mu sync.Mutex
	// putBrandErr and updateErr, when set, fail the next call.
	putBrandErr, updateErr error
	// goneBrief is a brief GetBrief no longer finds.
	goneBrief string
	// itemsInTx says whether the last CreateContentItems ran in a transaction.
	itemsInTx bool
	// updates counts the UpdateContentItem calls that changed something.
	updates int
}

func (f *faultyContent) mustBeID(id string) {
	if !ports.IsID(id) {
		f.t.Errorf("the store was asked for %q, which is not a UUID", id)
	}
}

func (f *faultyContent) PutBrand(ctx context.Context, b ports.Brand) error {
	f.mu.Lock()
	err := take(&f.putBrandErr)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.ContentStore.PutBrand(ctx, b)
}

func (f *faultyContent) GetBrief(ctx context.Context, org, id string) (ports.Brief, error) {
	f.mustBeID(id)
	f.mu.Lock()
	gone := f.goneBrief == id
	f.mu.Unlock()
	if gone {
		return ports.Brief{}, ports.NotFound("brief", id)
	}
	return f.ContentStore.GetBrief(ctx, org, id)
}

func (f *faultyContent) CreateContentItems(ctx context.Context, items ...ports.ContentItem) error {
	f.mu.Lock()
	f.itemsInTx = inTx(ctx)
	f.mu.Unlock()
	return f.ContentStore.CreateContentItems(ctx, items...)
}

func (f *faultyContent) GetContentItem(ctx context.Context, org, id string) (ports.ContentItem, error) {
	f.mustBeID(id)
	return f.ContentStore.GetContentItem(ctx, org, id)
}

func (f *faultyContent) UpdateContentItem(ctx context.Context, it ports.ContentItem) error {
	f.mu.Lock()
	err := take(&f.updateErr)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.ContentStore.UpdateContentItem(ctx, it); err != nil {
		return err
	}
	f.mu.Lock()
	f.updates++
	f.mu.Unlock()
	return nil
}

func (f *faultyContent) DeleteContentItem(ctx context.Context, org, id string) error {
	f.mustBeID(id)
	return f.ContentStore.DeleteContentItem(ctx, org, id)
}

// take returns the error in *p, clearing it.
func take(p *error) error {
	err := *p
	*p = nil
	return err
}

// marked is the store's Transactor marking the contexts of its
// transactions; it drops the jobs of a transaction rolled back, as the
// queue's port promises.
type marked struct {
	ports.Transactor
	e *env
}

func (m marked) WithinTx(ctx context.Context, fn func(context.Context) error) error {
	tx := &txMark{}
	err := m.Transactor.WithinTx(ctx, func(ctx context.Context) error { return fn(context.WithValue(ctx, txKey{}, tx)) })
	if err != nil {
		m.e.mu.Lock()
		m.e.queued = slices.DeleteFunc(m.e.queued, func(j enqueued) bool { return j.tx == tx })
		m.e.mu.Unlock()
	}
	return err
}

type env struct {
	t       *testing.T
	svc     *content.Service
	llm     *mocks.MockLLM
	clock   *fixture.Clock
	ids     *fixture.IDs
	store   *memstore.Store
	content *faultyContent
	mu      sync.Mutex
	reqs    []ports.ChatRequest
	queued  []enqueued
	// enqueueErrAt, when positive, fails that Enqueue call (1 is the next).
	enqueueErrAt int
}

// newEnv wires a Service to a memstore holding the principals' orgs and
// users, a scripted model and a queue recording its jobs.
func newEnv(t *testing.T, cfg content.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	store := memstore.New()
	e := &env{t: t, llm: mocks.NewMockLLM(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{}, store: store,
		content: &faultyContent{ContentStore: store, t: t}}
	for _, org := range []string{"org-1", "org-2"} {
		if err := store.CreateOrg(t.Context(), ports.Org{ID: org, Name: org}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []ports.Principal{alice, bob, olga} {
		if err := store.CreateUser(t.Context(), ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@example.com", Role: p.Role}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := mocks.NewMockJobQueue(ctrl)
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.enqueueErrAt > 0 {
				if e.enqueueErrAt--; e.enqueueErrAt == 0 {
					return ports.Errorf(ports.KindUnavailable, "the queue is down")
				}
			}
			tx, _ := ctx.Value(txKey{}).(*txMark)
			e.queued = append(e.queued, enqueued{args: args, opts: opts, inTx: inTx(ctx), tx: tx})
			return nil
		})
	e.svc = content.New(cfg, content.Deps{Store: e.content, Tx: marked{store, e}, Jobs: jobs, LLM: e.llm, Clock: e.clock, IDs: e.ids, Users: store})
	return e
}

func (e *env) item(id string) (ports.ContentItem, bool) {
	for _, org := range []string{"org-1", "org-2"} {
		if it, err := e.store.GetContentItem(e.t.Context(), org, id); err == nil {
			return it, true
		}
	}
	return ports.ContentItem{}, false
}

func (e *env) mustItem(id string) ports.ContentItem {
	e.t.Helper()
	it, ok := e.item(id)
	if !ok {
		e.t.Fatalf("item %s is not stored", id)
	}
	return it
}

// items returns the stored items of every org.
func (e *env) items() []ports.ContentItem {
	e.t.Helper()
	var out []ports.ContentItem
	for _, org := range []string{"org-1", "org-2"} {
		list, _, err := e.store.ListContentItems(e.t.Context(), org, ports.ContentFilter{}, ports.Page{Limit: ports.MaxPageLimit})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

func (e *env) jobs() []enqueued {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.queued)
}

func (e *env) updates() int {
	e.content.mu.Lock()
	defer e.content.mu.Unlock()
	return e.content.updates
}

// newBrief creates a brief of p's in project.
func (e *env) newBrief(p ports.Principal, in content.BriefInput) ports.Brief {
	e.t.Helper()
	in.ProjectID = cmp.Or(in.ProjectID, project)
	in.Title = cmp.Or(in.Title, "Why expense approvals take three weeks")
	b, err := e.svc.CreateBrief(as(p), in)
	if err != nil {
		e.t.Fatalf("CreateBrief: %v", err)
	}
	return b
}

// putBrand stores p's brand settings of project.
func (e *env) putBrand(p ports.Principal, in content.BrandInput) ports.Brand {
	e.t.Helper()
	b, err := e.svc.PutBrand(as(p), project, in)
	if err != nil {
		e.t.Fatalf("PutBrand: %v", err)
	}
	return b
}

// seedItem stores an item of p's in the status given, as if it had got
// there, at version 3, with a brief of its own, changed as given before it
// is stored.
func (e *env) seedItem(p ports.Principal, st ports.ContentStatus, change ...func(*ports.ContentItem)) ports.ContentItem {
	e.t.Helper()
	b := e.newBrief(p, content.BriefInput{})
	it := ports.ContentItem{ID: e.ids.NewID(), OrgID: p.OrgID, ProjectID: b.ProjectID, BriefID: b.ID, CreatedBy: p.UserID,
		Title: "Approvals, faster", Body: "Managers approve from their phone.", Format: "article", Status: st,
		Checks: []ports.ContentCheck{}, Variant: 1, Version: 3, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	if st == ports.ContentGenerating {
		it.Body = ""
	}
	for _, f := range change {
		f(&it)
	}
	if err := e.store.CreateContentItems(e.t.Context(), it); err != nil {
		e.t.Fatal(err)
	}
	return e.mustItem(it.ID)
}

// generate calls Generate and returns the jobs it enqueued.
func (e *env) generate(p ports.Principal, briefID string, variants int) []content.GenerateContentArgs {
	e.t.Helper()
	before := len(e.jobs())
	items, err := e.svc.Generate(as(p), briefID, variants)
	if err != nil {
		e.t.Fatalf("Generate: %v", err)
	}
	jobs := e.jobs()[before:]
	if len(jobs) != len(items) {
		e.t.Fatalf("Generate made %d items and %d jobs", len(items), len(jobs))
	}
	out := make([]content.GenerateContentArgs, len(jobs))
	for i, j := range jobs {
		out[i] = j.args.(content.GenerateContentArgs)
	}
	return out
}

// reply is one scripted model call.
type reply func(ctx context.Context, req ports.ChatRequest) (ports.ChatResult, error)

// script expects exactly these model calls, in order, and records the
// requests.
func (e *env) script(replies ...reply) {
	calls := make([]any, len(replies))
	for i, r := range replies {
		calls[i] = e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
			func(ctx context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
				e.mu.Lock()
				e.reqs = append(e.reqs, req)
				e.mu.Unlock()
				return r(ctx, req)
			})
	}
	if len(calls) > 1 {
		gomock.InOrder(calls...)
	}
}

// requests returns the model requests made since the last call.
func (e *env) requests() []ports.ChatRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.reqs
	e.reqs = nil
	return out
}

func answer(content string) reply {
	return answerWith(content, ports.FinishStop)
}

func answerWith(content string, finish ports.FinishReason) reply {
	return func(context.Context, ports.ChatRequest) (ports.ChatResult, error) {
		return ports.ChatResult{Content: content, FinishReason: finish, Model: "model-x", Usage: ports.Usage{PromptTokens: 100, CompletionTokens: 50}}, nil
	}
}

func fail(err error) reply {
	return func(context.Context, ports.ChatRequest) (ports.ChatResult, error) { return ports.ChatResult{}, err }
}

func errCode(err error) string {
	if e, ok := ports.AsError(err); ok {
		return e.ErrorCode()
	}
	return ""
}

func fieldsOf(err error) []string {
	e, ok := ports.AsError(err)
	if !ok {
		return nil
	}
	out := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = f.Field
	}
	return out
}

func ptr[T any](v T) *T { return &v }
