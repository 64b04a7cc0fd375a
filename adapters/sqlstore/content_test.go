package sqlstore_test

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// TestContentBriefCascade deletes a brief in SQL (the port has no way to):
// its content items go with it, and other briefs' stay.
func TestContentBriefCascade(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		content, ids := sqlstore.NewContent(db), sqlstore.NewIdentity(db)
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		org := ports.Org{ID: "org-cascade", Name: "cascade", CreatedAt: now}
		if err := ids.CreateOrg(ctx, org); err != nil {
			t.Fatal(err)
		}
		var items []ports.ContentItem
		for _, briefID := range []string{"brief-gone", "brief-kept"} {
			b := ports.Brief{ID: briefID, OrgID: org.ID, ProjectID: "p", Title: briefID, CreatedAt: now}
			if err := content.CreateBrief(ctx, b); err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"1", "2"} {
				items = append(items, ports.ContentItem{ID: briefID + "-" + v, OrgID: org.ID, ProjectID: "p", BriefID: briefID, CreatedAt: now})
			}
		}
		if err := content.CreateContentItems(ctx, items...); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind("DELETE FROM content_briefs WHERE id = ?"), "brief-gone"); err != nil {
			t.Fatalf("delete brief: %v", err)
		}
		for _, it := range items {
			_, err := content.GetContentItem(ctx, org.ID, it.ID)
			if gone := it.BriefID == "brief-gone"; gone != ports.IsKind(err, ports.KindNotFound) || (!gone && err != nil) {
				t.Errorf("GetContentItem(%s) after deleting brief-gone: %v", it.ID, err)
			}
		}
	})
}
