package demomodel_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// memContent is an in-memory ContentStore, enough for the happy path of
// core/content.
type memContent struct {
	mu     sync.Mutex
	brands map[string]ports.Brand
	briefs map[string]ports.Brief
	items  map[string]ports.ContentItem
	// projectStore answers the project methods this happy path does not
	// use (nil: they would panic); EnsureContentProject is defined below.
	projectStore
}

// projectStore is the project half of ports.ContentStore.
type projectStore interface {
	CreateContentProject(ctx context.Context, p ports.ContentProject) error
	GetContentProject(ctx context.Context, orgID, id string) (ports.ContentProject, error)
	ListContentProjects(ctx context.Context, orgID string, page ports.Page) ([]ports.ContentProject, string, error)
	UpdateContentProject(ctx context.Context, p ports.ContentProject) error
}

// EnsureContentProject pretends every project exists.
func (m *memContent) EnsureContentProject(context.Context, ports.ContentProject) (bool, error) {
	return false, nil
}

func newMemContent() *memContent {
	return &memContent{brands: map[string]ports.Brand{}, briefs: map[string]ports.Brief{}, items: map[string]ports.ContentItem{}}
}

func (m *memContent) GetBrand(_ context.Context, org, project string) (ports.Brand, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.brands[org+"/"+project]
	if !ok {
		return ports.Brand{}, ports.NotFound("brand", project)
	}
	return b, nil
}

func (m *memContent) PutBrand(_ context.Context, b ports.Brand) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.brands[b.OrgID+"/"+b.ProjectID] = b
	return nil
}

func (m *memContent) CreateBrief(_ context.Context, b ports.Brief) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.briefs[b.ID] = b
	return nil
}

func (m *memContent) GetBrief(_ context.Context, _, id string) (ports.Brief, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.briefs[id]
	if !ok {
		return ports.Brief{}, ports.NotFound("brief", id)
	}
	return b, nil
}

func (m *memContent) ListBriefs(context.Context, string, string, ports.Page) ([]ports.Brief, string, error) {
	return nil, "", nil
}

func (m *memContent) CreateContentItems(_ context.Context, items ...ports.ContentItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range items {
		m.items[it.ID] = it
	}
	return nil
}

func (m *memContent) GetContentItem(_ context.Context, _, id string) (ports.ContentItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok {
		return ports.ContentItem{}, ports.NotFound("content item", id)
	}
	return it, nil
}

func (m *memContent) ListContentItems(context.Context, string, ports.ContentFilter, ports.Page) ([]ports.ContentItem, string, error) {
	return nil, "", nil
}

func (m *memContent) UpdateContentItem(_ context.Context, it ports.ContentItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items[it.ID].Version != it.Version-1 {
		return ports.ErrPreconditionFailed
	}
	m.items[it.ID] = it
	return nil
}

func (m *memContent) DeleteContentItem(_ context.Context, _, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, id)
	return nil
}

// TestContentDrafts has a real core/content.Service write drafts with the
// demo model over HTTP, and expects them to pass the brand checks: no
// banned word, no term the brand avoids, and a length within the brief's.
func TestContentDrafts(t *testing.T) {
	t.Parallel()
	admin := ports.Principal{UserID: "user-admin", OrgID: "org-1", Role: ports.RoleAdmin}
	tests := []struct {
		name  string
		brand content.BrandInput
		brief content.BriefInput
		// wantInBody are phrases the body must contain.
		wantInBody []string
		markdown   bool
	}{
		{
			name: "article with banned words and preferred terms",
			brand: content.BrandInput{Name: "Acme", Voice: "Warm and plain", BannedWords: []string{"synergy", "leverage", "game changer", "launch"},
				PreferredTerms: map[string]string{"customers": "clients", "cheap": "affordable"}},
			brief: content.BriefInput{ProjectID: "acme", Title: "Spring launch of the expense app", Goal: "Get finance teams to try the new expense app.",
				Audience: "Finance teams in small companies", Channel: "blog", Format: "article",
				Keywords: []string{"receipts", "synergy", "approvals", "cheap exports"}, CTA: "Start a free trial today", MinWords: 300, MaxWords: 500},
			wantInBody: []string{"receipts", "approvals", "affordable exports", "Start a free trial today.", "Get finance teams to try the new expense app."},
			markdown:   true,
		},
		{
			name:       "short post with a tight maximum",
			brand:      content.BrandInput{BannedWords: []string{"free"}},
			brief:      content.BriefInput{ProjectID: "acme", Title: "New dashboards", Channel: "linkedin", Format: "post", CTA: "Try it for free now", MaxWords: 40},
			wantInBody: []string{"Try it for now."},
		},
		{
			name:     "minimum only, no keywords",
			brief:    content.BriefInput{ProjectID: "acme", Title: "Our year in review", MinWords: 600},
			markdown: true,
		},
		{
			name:  "tiny maximum",
			brief: content.BriefInput{ProjectID: "acme", Title: "Hello", Goal: "Say hello to every reader of this newsletter today.", Format: "email", MaxWords: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, jobs := newMemContent(), &jobList{}
			svc := content.New(content.Config{}, content.Deps{Store: store, Tx: noTx{}, Jobs: jobs, LLM: llm(t),
				Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
			ctx := ports.WithPrincipal(context.Background(), admin)
			brand, err := svc.PutBrand(ctx, "acme", tt.brand)
			if err != nil {
				t.Fatal(err)
			}
			brief, err := svc.CreateBrief(ctx, tt.brief)
			if err != nil {
				t.Fatal(err)
			}
			items, err := svc.Generate(ctx, brief.ID, 3)
			if err != nil {
				t.Fatal(err)
			}
			for range items {
				jobs.mu.Lock()
				job := jobs.jobs[0].(content.GenerateContentArgs)
				jobs.jobs = jobs.jobs[1:]
				jobs.mu.Unlock()
				if err := svc.RunGeneration(context.Background(), job, true); err != nil {
					t.Fatal(err)
				}
			}
			titles := map[string]bool{}
			for _, it := range items {
				got, err := svc.Item(ctx, it.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != ports.ContentDraft || got.Error != nil {
					t.Fatalf("variant %d: status %s, error %+v", got.Variant, got.Status, got.Error)
				}
				if len(got.Checks) != 0 {
					t.Errorf("variant %d: checks %+v\n%s\n%s", got.Variant, got.Checks, got.Title, got.Body)
				}
				if again := content.Check(brand, brief, got.Title, got.Body); len(again) != 0 {
					t.Errorf("variant %d: Check finds %+v", got.Variant, again)
				}
				for _, w := range tt.wantInBody {
					if !strings.Contains(got.Body, w) {
						t.Errorf("variant %d: body lacks %q:\n%s", got.Variant, w, got.Body)
					}
				}
				if strings.Contains(got.Body, "## ") != tt.markdown {
					t.Errorf("variant %d: subheadings %v, want %v:\n%s", got.Variant, !tt.markdown, tt.markdown, got.Body)
				}
				for _, bad := range tt.brand.BannedWords {
					if regexp.MustCompile(`(?i)` + regexp.QuoteMeta(bad)).MatchString(got.Title + got.Body) {
						t.Errorf("variant %d uses %q even inside a word", got.Variant, bad)
					}
				}
				titles[got.Title] = true
			}
			if len(titles) != 3 {
				t.Errorf("the variants' titles are not distinct: %v", titles)
			}
		})
	}
}
