package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// Migration 00031 gives every project id already used by brand settings,
// briefs, content items and publishing targets a project named after the
// id, created when the id was first used; ids of one org that differ only
// in case get distinct names; another org's same id is its own project.
func TestMigrationContentProjects(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, d), sqlstore.WithMaxConns(sqlstoretest.TestMaxConns))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			if err := sqlstore.MigrateTo(ctx, db, 30); err != nil {
				t.Fatalf("migrate to 30: %v", err)
			}
			day := func(n int) time.Time { return time.Date(2026, 1, n, 3, 4, 5, 0, time.UTC) }
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind(q), args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			for _, org := range []string{"o1", "o2"} {
				exec("INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)", org, org, sqlstore.Timestamp(day(1)))
			}
			brand := func(org, project string, at time.Time) {
				exec(`INSERT INTO content_brands (org_id, project_id, tone, brand_values, banned_words, preferred_terms, examples, version, updated_at)
					VALUES (?, ?, '[]', '[]', '[]', '{}', '[]', 1, ?)`, org, project, sqlstore.Timestamp(at))
			}
			brief := func(id, org, project string, at time.Time) {
				exec(`INSERT INTO content_briefs (id, org_id, project_id, title, keywords, created_at) VALUES (?, ?, ?, 't', '[]', ?)`,
					id, org, project, sqlstore.Timestamp(at))
			}
			brand("o1", "blog", day(5))
			brief("b1", "o1", "blog", day(3))
			exec(`INSERT INTO content_items (id, org_id, project_id, brief_id, status, checks, version, created_at, updated_at)
				VALUES ('i1', 'o1', 'news', 'b1', 'draft', '[]', 1, ?, ?)`, sqlstore.Timestamp(day(4)), sqlstore.Timestamp(day(4)))
			exec(`INSERT INTO content_targets (id, org_id, project_id, name, kind, config, created_at)
				VALUES ('t1', 'o1', 'hooks', 'x', 'webhook', '{}', ?)`, sqlstore.Timestamp(day(6)))
			brand("o1", "Blog", day(7))
			brand("o2", "blog", day(2))

			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			store := sqlstore.NewContent(db)
			want := map[[2]string]ports.ContentProject{
				{"o1", "blog"}:  {ID: "blog", OrgID: "o1", Name: "blog", Version: 1, CreatedAt: day(3), UpdatedAt: day(3)},
				{"o1", "Blog"}:  {ID: "Blog", OrgID: "o1", Name: "Blog (426c6f67)", Version: 1, CreatedAt: day(7), UpdatedAt: day(7)},
				{"o1", "news"}:  {ID: "news", OrgID: "o1", Name: "news", Version: 1, CreatedAt: day(4), UpdatedAt: day(4)},
				{"o1", "hooks"}: {ID: "hooks", OrgID: "o1", Name: "hooks", Version: 1, CreatedAt: day(6), UpdatedAt: day(6)},
				{"o2", "blog"}:  {ID: "blog", OrgID: "o2", Name: "blog", Version: 1, CreatedAt: day(2), UpdatedAt: day(2)},
			}
			for k, w := range want {
				got, err := store.GetContentProject(ctx, k[0], k[1])
				if err != nil {
					t.Errorf("project %v after the migration: %v", k, err)
					continue
				}
				if got != w {
					t.Errorf("project %v after the migration = %+v, want %+v", k, got, w)
				}
			}
			for _, org := range []string{"o1", "o2"} {
				list, _, err := store.ListContentProjects(ctx, org, ports.Page{})
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for k := range want {
					if k[0] == org {
						n++
					}
				}
				if len(list) != n {
					t.Errorf("org %s lists %d projects after the migration, want %d: %+v", org, len(list), n, list)
				}
			}
			// The backfilled names are taken, ignoring case.
			err = store.CreateContentProject(ctx, ports.ContentProject{ID: "new", OrgID: "o1", Name: "NEWS", CreatedAt: day(8)})
			if ports.KindOf(err) != ports.KindConflict {
				t.Errorf("a project named NEWS beside news: %v, want conflict", err)
			}
		})
	}
}
