package content_test

import (
	"errors"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// Only a transient store error is retried; a permanent one fails the item at
// once, with a reason.
func TestRunGenerationStoreErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		err     error
		retried bool
	}{
		{"unavailable", ports.Errorf(ports.KindUnavailable, "database down"), true},
		{"a value the database refuses", ports.Wrap(ports.KindInternal, errors.New(`pq: invalid byte sequence for encoding "UTF8": 0x00`), "database error"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, content.Config{})
			jobs := started(e, content.BrandInput{Name: "Acme"}, content.BriefInput{Goal: "Book demos"}, 1)
			e.script(answer(`{"title":"Approvals","body":"Approve expenses from your phone."}`))
			e.content.updateErr = tt.err
			err := e.svc.RunGeneration(t.Context(), jobs[0], false)
			it := e.mustItem(jobs[0].ItemID)
			if tt.retried {
				if !errors.Is(err, tt.err) || it.Status != ports.ContentGenerating {
					t.Fatalf("RunGeneration = %v, item %s; want the error returned for a retry, still generating", err, it.Status)
				}
				return
			}
			if err != nil || it.Status != ports.ContentFailed || it.Error == nil || it.Error.Message == "" {
				t.Fatalf("RunGeneration = %v, item %s %+v; want nil and the item failed with a reason", err, it.Status, it.Error)
			}
		})
	}
}

// A job whose last attempt was interrupted fails its item with code
// interrupted.
func TestAbandonGeneration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	jobs := started(e, content.BrandInput{Name: "Acme"}, content.BriefInput{Goal: "Book demos"}, 1)
	if err := e.svc.AbandonGeneration(t.Context(), jobs[0]); err != nil {
		t.Fatal(err)
	}
	if it := e.mustItem(jobs[0].ItemID); it.Status != ports.ContentFailed || it.Error == nil || it.Error.Code != "interrupted" {
		t.Fatalf("item %s %+v, want failed: interrupted", it.Status, it.Error)
	}
}
