package content_test

import (
	"cmp"
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

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

type enqueued struct {
	args ports.JobArgs
	opts ports.EnqueueOptions
	inTx bool
}

type brandKey struct{ org, project string }

// mem is the state behind the store mock, kept as the port promises: the
// tests read what was stored.
type mem struct {
	mu     sync.Mutex
	brands map[brandKey]ports.Brand
	briefs map[string]ports.Brief
	items  map[string]ports.ContentItem
	jobs   []enqueued
	// itemsInTx says whether the last CreateContentItems ran in a transaction.
	itemsInTx bool
	// updates counts the UpdateContentItem calls that changed something.
	updates int
	// enqueueErrAt, when positive, fails that Enqueue call (1 is the next).
	enqueueErrAt int
	// putBrandErr and updateErr, when set, fail the next call.
	putBrandErr, updateErr error
}

func (m *mem) snapshot() *mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &mem{brands: maps.Clone(m.brands), briefs: maps.Clone(m.briefs), items: maps.Clone(m.items), jobs: slices.Clone(m.jobs)}
}

func (m *mem) restore(s *mem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.brands, m.briefs, m.items, m.jobs = s.brands, s.briefs, s.items, s.jobs
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

type env struct {
	t     *testing.T
	svc   *content.Service
	llm   *mocks.MockLLM
	clock *fixture.Clock
	ids   *fixture.IDs
	m     *mem
	reqMu sync.Mutex
	reqs  []ports.ChatRequest
}

// newEnv wires a Service to mocks backed by mem.
func newEnv(t *testing.T, cfg content.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := &env{t: t, llm: mocks.NewMockLLM(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{},
		m: &mem{brands: map[brandKey]ports.Brand{}, briefs: map[string]ports.Brief{}, items: map[string]ports.ContentItem{}}}
	m := e.m
	store := mocks.NewMockContentStore(ctrl)
	tx := mocks.NewMockTransactor(ctrl)
	jobs := mocks.NewMockJobQueue(ctrl)

	// Transactions roll back on error, as the port promises.
	tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error {
			saved := m.snapshot()
			err := fn(context.WithValue(ctx, txKey{}, true))
			if err != nil {
				m.restore(saved)
			}
			return err
		})
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.enqueueErrAt > 0 {
				if m.enqueueErrAt--; m.enqueueErrAt == 0 {
					return ports.Errorf(ports.KindUnavailable, "the queue is down")
				}
			}
			m.jobs = append(m.jobs, enqueued{args: args, opts: opts, inTx: inTx(ctx)})
			return nil
		})

	// Ids that are not UUIDs never reach the store.
	mustBeUUID := func(id string) {
		if !uuidRE.MatchString(id) {
			t.Errorf("the store was asked for %q, which is not a UUID", id)
		}
	}

	store.EXPECT().GetBrand(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org, projectID string) (ports.Brand, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if b, ok := m.brands[brandKey{org, projectID}]; ok {
				return b, nil
			}
			return ports.Brand{}, ports.NotFound("brand settings of project", projectID)
		})
	store.EXPECT().PutBrand(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, b ports.Brand) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := m.putBrandErr; err != nil {
				m.putBrandErr = nil
				return err
			}
			k := brandKey{b.OrgID, b.ProjectID}
			if m.brands[k].Version != b.Version-1 {
				return ports.Errorf(ports.KindPreconditionFailed, "brand version %d is stored", m.brands[k].Version)
			}
			m.brands[k] = b
			return nil
		})
	store.EXPECT().CreateBrief(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, b ports.Brief) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.briefs[b.ID] = b
			return nil
		})
	store.EXPECT().GetBrief(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org, id string) (ports.Brief, error) {
			mustBeUUID(id)
			m.mu.Lock()
			defer m.mu.Unlock()
			if b, ok := m.briefs[id]; ok && b.OrgID == org {
				return b, nil
			}
			return ports.Brief{}, ports.NotFound("content brief", id)
		})
	store.EXPECT().ListBriefs(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org, projectID string, page ports.Page) ([]ports.Brief, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.Brief
			for _, b := range m.briefs {
				if b.OrgID == org && (projectID == "" || b.ProjectID == projectID) {
					out = append(out, b)
				}
			}
			slices.SortFunc(out, func(a, b ports.Brief) int { return strings.Compare(b.ID, a.ID) })
			return pageOf(out, page)
		})
	store.EXPECT().CreateContentItems(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, items ...ports.ContentItem) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.itemsInTx = inTx(ctx)
			for _, it := range items {
				m.items[it.ID] = it
			}
			return nil
		})
	store.EXPECT().GetContentItem(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org, id string) (ports.ContentItem, error) {
			mustBeUUID(id)
			m.mu.Lock()
			defer m.mu.Unlock()
			if it, ok := m.items[id]; ok && it.OrgID == org {
				return it, nil
			}
			return ports.ContentItem{}, ports.NotFound("content item", id)
		})
	store.EXPECT().ListContentItems(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org string, f ports.ContentFilter, page ports.Page) ([]ports.ContentItem, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.ContentItem
			for _, it := range m.items {
				if it.OrgID == org && (f.ProjectID == "" || it.ProjectID == f.ProjectID) &&
					(f.BriefID == "" || it.BriefID == f.BriefID) && (f.Status == "" || it.Status == f.Status) {
					out = append(out, it)
				}
			}
			slices.SortFunc(out, func(a, b ports.ContentItem) int {
				return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(b.ID, a.ID))
			})
			return pageOf(out, page)
		})
	store.EXPECT().UpdateContentItem(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, it ports.ContentItem) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := m.updateErr; err != nil {
				m.updateErr = nil
				return err
			}
			old, ok := m.items[it.ID]
			if !ok || old.OrgID != it.OrgID {
				return ports.NotFound("content item", it.ID)
			}
			if old.Version != it.Version-1 {
				return ports.Errorf(ports.KindPreconditionFailed, "content item %s is at version %d", it.ID, old.Version)
			}
			old.Title, old.Body, old.Format, old.Status, old.Checks, old.Error, old.Model, old.Version, old.UpdatedAt =
				it.Title, it.Body, it.Format, it.Status, it.Checks, it.Error, it.Model, it.Version, it.UpdatedAt
			m.items[it.ID] = old
			m.updates++
			return nil
		})
	store.EXPECT().DeleteContentItem(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, org, id string) error {
			mustBeUUID(id)
			m.mu.Lock()
			defer m.mu.Unlock()
			if it, ok := m.items[id]; ok && it.OrgID == org {
				delete(m.items, id)
				return nil
			}
			return ports.NotFound("content item", id)
		})

	e.svc = content.New(cfg, content.Deps{Store: store, Tx: tx, Jobs: jobs, LLM: e.llm, Clock: e.clock, IDs: e.ids})
	return e
}

func pageOf[T any](all []T, page ports.Page) ([]T, string, error) {
	if page.Cursor != "" {
		return nil, "", ports.Invalid("bad cursor", ports.FieldError{Field: "cursor", Reason: "unknown"})
	}
	if len(all) > page.Limit {
		return all[:page.Limit], "next", nil
	}
	return all, "", nil
}

func (e *env) item(id string) (ports.ContentItem, bool) {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	it, ok := e.m.items[id]
	return it, ok
}

func (e *env) mustItem(id string) ports.ContentItem {
	e.t.Helper()
	it, ok := e.item(id)
	if !ok {
		e.t.Fatalf("item %s is not stored", id)
	}
	return it
}

func (e *env) jobs() []enqueued {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.jobs)
}

func (e *env) updates() int {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.updates
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
// there, at version 3.
func (e *env) seedItem(p ports.Principal, st ports.ContentStatus) ports.ContentItem {
	e.t.Helper()
	b := e.newBrief(p, content.BriefInput{})
	it := ports.ContentItem{ID: e.ids.NewID(), OrgID: p.OrgID, ProjectID: b.ProjectID, BriefID: b.ID, CreatedBy: p.UserID,
		Title: "Approvals, faster", Body: "Managers approve from their phone.", Format: "article", Status: st,
		Checks: []ports.ContentCheck{}, Variant: 1, Version: 3, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	if st == ports.ContentGenerating {
		it.Body = ""
	}
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	e.m.items[it.ID] = it
	return it
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
				e.reqMu.Lock()
				e.reqs = append(e.reqs, req)
				e.reqMu.Unlock()
				return r(ctx, req)
			})
	}
	if len(calls) > 1 {
		gomock.InOrder(calls...)
	}
}

// requests returns the model requests made since the last call.
func (e *env) requests() []ports.ChatRequest {
	e.reqMu.Lock()
	defer e.reqMu.Unlock()
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
