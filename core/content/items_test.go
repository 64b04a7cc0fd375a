package content_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

var statuses = []ports.ContentStatus{
	ports.ContentGenerating, ports.ContentDraft, ports.ContentInReview, ports.ContentApproved,
	ports.ContentPublished, ports.ContentArchived, ports.ContentFailed,
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	allowed := map[[2]ports.ContentStatus]bool{
		{ports.ContentDraft, ports.ContentInReview}:     true,
		{ports.ContentInReview, ports.ContentApproved}:  true,
		{ports.ContentInReview, ports.ContentDraft}:     true,
		{ports.ContentApproved, ports.ContentPublished}: true,
		{ports.ContentApproved, ports.ContentDraft}:     true,
	}
	for _, from := range statuses {
		for _, to := range statuses {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, content.Config{})
				it := e.seedItem(alice, from)
				e.clock.Advance(time.Hour)
				in := content.UpdateInput{Version: it.Version, Status: ptr(to)}
				if to == ports.ContentPublished && from != to {
					in.PublishedURL = ptr("https://example.com/elsewhere")
				}
				got, err := e.svc.UpdateItem(as(bob), it.ID, in)

				var code string
				switch {
				case from == ports.ContentGenerating && to == from:
					code = content.CodeNotEditable // nothing would move, but the draft being written would be dropped
				case to == ports.ContentArchived || to == from || allowed[[2]ports.ContentStatus{from, to}]:
				default:
					code = content.CodeInvalidTransition
				}
				if code != "" {
					if !errors.Is(err, ports.ErrConflict) || errCode(err) != code {
						t.Fatalf("UpdateItem = %+v, %v; want conflict %s", got, err, code)
					}
					if code == content.CodeInvalidTransition && !strings.Contains(err.Error(), fmt.Sprintf("from %s to %s", from, to)) {
						t.Errorf("message %q names neither status", err)
					}
					if !reflect.DeepEqual(e.mustItem(it.ID), it) || e.updates() != 0 {
						t.Error("the item changed")
					}
					return
				}
				if err != nil {
					t.Fatalf("UpdateItem = %v", err)
				}
				if got.Status != to || got.Version != it.Version+1 || !got.UpdatedAt.Equal(fixture.Epoch.Add(time.Hour)) || got.Body != it.Body {
					t.Errorf("UpdateItem = %+v", got)
				}
				if !reflect.DeepEqual(e.mustItem(it.ID), got) {
					t.Errorf("stored %+v, returned %+v", e.mustItem(it.ID), got)
				}
			})
		}
	}
}

func TestEdits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		from   ports.ContentStatus
		in     content.UpdateInput // Version is filled in
		status ports.ContentStatus // after; "" for a conflict
		code   string
	}{
		{name: "draft edit", from: ports.ContentDraft, in: content.UpdateInput{Body: ptr("New body.")}, status: ports.ContentDraft},
		{name: "in review edit stays in review", from: ports.ContentInReview, in: content.UpdateInput{Title: ptr("New")}, status: ports.ContentInReview},
		{name: "approved edit returns to draft", from: ports.ContentApproved, in: content.UpdateInput{Body: ptr("New body.")}, status: ports.ContentDraft},
		{name: "approved format change returns to draft", from: ports.ContentApproved, in: content.UpdateInput{Format: ptr("email")}, status: ports.ContentDraft},
		{name: "approved, unchanged text keeps approval", from: ports.ContentApproved,
			in: content.UpdateInput{Title: ptr("Approvals, faster"), Body: ptr("Managers approve from their phone.")}, status: ports.ContentApproved},
		{name: "approved edit sent to review", from: ports.ContentApproved,
			in: content.UpdateInput{Body: ptr("New body."), Status: ptr(ports.ContentInReview)}, status: ports.ContentInReview},
		{name: "approved edit cannot stay approved", from: ports.ContentApproved,
			in: content.UpdateInput{Body: ptr("New body."), Status: ptr(ports.ContentApproved)}, code: content.CodeInvalidTransition},
		{name: "approved edit cannot be published", from: ports.ContentApproved,
			in: content.UpdateInput{Body: ptr("New body."), Status: ptr(ports.ContentPublished)}, code: content.CodeInvalidTransition},
		{name: "approved edit archived", from: ports.ContentApproved,
			in: content.UpdateInput{Body: ptr("New body."), Status: ptr(ports.ContentArchived)}, status: ports.ContentArchived},
		{name: "draft edit and review", from: ports.ContentDraft,
			in: content.UpdateInput{Title: ptr("New"), Status: ptr(ports.ContentInReview)}, status: ports.ContentInReview},
		{name: "published", from: ports.ContentPublished, in: content.UpdateInput{Body: ptr("x")}, code: content.CodeNotEditable},
		{name: "published, archived with an edit", from: ports.ContentPublished,
			in: content.UpdateInput{Body: ptr("x"), Status: ptr(ports.ContentArchived)}, code: content.CodeNotEditable},
		{name: "published, unchanged text archived", from: ports.ContentPublished,
			in: content.UpdateInput{Body: ptr("Managers approve from their phone."), Status: ptr(ports.ContentArchived)}, status: ports.ContentArchived},
		{name: "archived", from: ports.ContentArchived, in: content.UpdateInput{Title: ptr("x")}, code: content.CodeNotEditable},
		{name: "failed", from: ports.ContentFailed, in: content.UpdateInput{Body: ptr("x")}, code: content.CodeNotEditable},
		{name: "generating", from: ports.ContentGenerating, in: content.UpdateInput{Body: ptr("x")}, code: content.CodeNotEditable},
		{name: "generating, nothing", from: ports.ContentGenerating, code: content.CodeNotEditable},
		{name: "nothing changes in draft", from: ports.ContentDraft, status: ports.ContentDraft},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, content.Config{})
			it := e.seedItem(alice, tt.from)
			in := tt.in
			in.Version = it.Version
			got, err := e.svc.UpdateItem(as(alice), it.ID, in)
			if tt.code != "" {
				if !errors.Is(err, ports.ErrConflict) || errCode(err) != tt.code {
					t.Fatalf("UpdateItem = %v, want conflict %s", err, tt.code)
				}
				if !reflect.DeepEqual(e.mustItem(it.ID), it) {
					t.Error("the item changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := it
			if in.Title != nil {
				want.Title = *in.Title
			}
			if in.Body != nil {
				want.Body = *in.Body
			}
			if in.Format != nil {
				want.Format = *in.Format
			}
			want.Status, want.Version, want.Checks = tt.status, it.Version+1, []ports.ContentCheck{}
			if want.Title != it.Title || want.Body != it.Body {
				want.EditedBy, want.EditedByName = alice.UserID, "user-alice@example.com"
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(e.mustItem(it.ID), want) {
				t.Errorf("UpdateItem =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestUpdateVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	it := e.seedItem(alice, ports.ContentDraft)

	_, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Body: ptr("x")})
	if !errors.Is(err, ports.ErrPreconditionRequired) || errCode(err) != content.CodeVersionRequired {
		t.Errorf("without a version: %v", err)
	}
	_, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: 2, Body: ptr("x")})
	if !errors.Is(err, ports.ErrPreconditionFailed) || errCode(err) != content.CodeStaleVersion ||
		!strings.Contains(err.Error(), "is at version 3, not 2") {
		t.Errorf("a stale version: %v", err)
	}
	_, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: -1})
	if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), []string{"version"}) {
		t.Errorf("a negative version: %v", err)
	}

	// Another update wins the race between the read and the write.
	race := ports.Errorf(ports.KindPreconditionFailed, "content item is at version 4")
	e.content.updateErr = race
	_, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: 3, Body: ptr("x")})
	if !errors.Is(err, ports.ErrPreconditionFailed) || errCode(err) != content.CodeStaleVersion || !errors.Is(err, race) {
		t.Errorf("a lost race: %v", err)
	}
	if got := e.mustItem(it.ID); !reflect.DeepEqual(got, it) {
		t.Errorf("the item changed: %+v", got)
	}

	e.content.updateErr = ports.Errorf(ports.KindUnavailable, "database down")
	if _, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: 3}); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("a store error: %v", err)
	}

	// Two updates from one version: the second is stale.
	if _, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: 3, Title: ptr("One")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: 3, Title: ptr("Two")}); errCode(err) != content.CodeStaleVersion {
		t.Errorf("the second update from one version: %v", err)
	}
	if got := e.mustItem(it.ID); got.Title != "One" || got.Version != 4 {
		t.Errorf("stored %+v", got)
	}
}

func TestUpdateInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	it := e.seedItem(alice, ports.ContentDraft)
	tests := []struct {
		in     content.UpdateInput
		fields []string
	}{
		{content.UpdateInput{Title: ptr(" ")}, []string{"title"}},
		{content.UpdateInput{Title: ptr(strings.Repeat("ü", 201))}, []string{"title"}},
		{content.UpdateInput{Body: ptr(strings.Repeat("ü", content.MaxBodyLen+1))}, []string{"body"}},
		{content.UpdateInput{Format: ptr("")}, []string{"format"}},
		{content.UpdateInput{Format: ptr(strings.Repeat("f", 51))}, []string{"format"}},
		{content.UpdateInput{Status: ptr(ports.ContentStatus("done"))}, []string{"status"}},
		{content.UpdateInput{Title: ptr(""), Format: ptr(""), Status: ptr(ports.ContentStatus("x"))}, []string{"title", "format", "status"}},
	}
	for _, tt := range tests {
		tt.in.Version = it.Version
		_, err := e.svc.UpdateItem(as(alice), it.ID, tt.in)
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("UpdateItem(%+v) = %v, want invalid %v", tt.in, err, tt.fields)
		}
	}
	// At the limits, and trimmed.
	got, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: it.Version, Title: ptr(" " + strings.Repeat("ü", 200) + " "),
		Body: ptr(strings.Repeat("ü", content.MaxBodyLen)), Format: ptr(" email ")})
	if err != nil || got.Title != strings.Repeat("ü", 200) || got.Format != "email" {
		t.Errorf("UpdateItem at the limits = %v", err)
	}
	if e.updates() != 1 {
		t.Errorf("%d updates", e.updates())
	}
}

func TestUpdateRunsChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	// The item's brief has length bounds.
	b := e.newBrief(alice, content.BriefInput{MinWords: 5})
	it := e.seedItem(alice, ports.ContentInReview, func(it *ports.ContentItem) { it.BriefID = b.ID })
	e.putBrand(alice, content.BrandInput{BannedWords: []string{"cheap"}, PreferredTerms: map[string]string{"utilize": "use"}})

	got, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: it.Version, Body: ptr("Cheap tools we utilize.")})
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.ContentCheck{
		{Kind: "banned_word", Term: "cheap", Message: `uses the banned word "cheap" once`},
		{Kind: "preferred_term", Term: "utilize", Message: `uses "utilize"; the brand prefers "use"`},
		{Kind: "length", Message: "the body has 4 words; the brief asks for at least 5"},
	}
	if !reflect.DeepEqual(got.Checks, want) || !reflect.DeepEqual(e.mustItem(it.ID).Checks, want) {
		t.Errorf("checks %+v", got.Checks)
	}

	// A status change alone checks against the brand as it now is; the
	// length finding left needs an override to approve.
	e.putBrand(alice, content.BrandInput{})
	got, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: got.Version, Status: ptr(ports.ContentApproved), OverrideReason: ptr("short on purpose")})
	if err != nil || len(got.Checks) != 1 || got.Checks[0].Kind != "length" {
		t.Errorf("after the brand changed: %+v, %v", got.Checks, err)
	}
	got, err = e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: got.Version, Body: ptr("one two three four five")})
	if err != nil || got.Checks == nil || len(got.Checks) != 0 || got.Status != ports.ContentDraft {
		t.Errorf("a clean body: %+v, %v", got, err)
	}
}

func TestItemAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	it := e.seedItem(alice, ports.ContentDraft)

	got, err := e.svc.Item(as(bob), it.ID)
	if err != nil || !reflect.DeepEqual(got, it) {
		t.Errorf("Item = %+v, %v", got, err)
	}
	for _, tt := range []struct {
		p  ports.Principal
		id string
	}{{olga, it.ID}, {alice, absent}, {alice, "not-a-uuid"}, {alice, ""}, {alice, strings.ToUpper(it.ID) + "x"}} {
		if _, err := e.svc.Item(as(tt.p), tt.id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Item(%s, %q) = %v", tt.p.UserID, tt.id, err)
		}
		if _, err := e.svc.UpdateItem(as(tt.p), tt.id, content.UpdateInput{Version: 3, Title: ptr("x")}); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("UpdateItem(%s, %q) = %v", tt.p.UserID, tt.id, err)
		}
		if err := e.svc.DeleteItem(as(tt.p), tt.id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("DeleteItem(%s, %q) = %v", tt.p.UserID, tt.id, err)
		}
	}
	if _, ok := e.item(it.ID); !ok {
		t.Fatal("another org deleted the item")
	}

	ctx := context.Background()
	if _, err := e.svc.Item(ctx, it.ID); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("Item without a principal: %v", err)
	}
	if _, err := e.svc.UpdateItem(ctx, it.ID, content.UpdateInput{Version: 3}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("UpdateItem without a principal: %v", err)
	}
	if err := e.svc.DeleteItem(ctx, it.ID); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("DeleteItem without a principal: %v", err)
	}
	if _, _, err := e.svc.ListItems(ctx, ports.ContentFilter{}, ports.Page{}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("ListItems without a principal: %v", err)
	}
}

func TestDeleteItemInAnyStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	for _, st := range statuses {
		it := e.seedItem(alice, st)
		if err := e.svc.DeleteItem(as(bob), it.ID); err != nil {
			t.Errorf("DeleteItem(%s) = %v", st, err)
		}
		if _, ok := e.item(it.ID); ok {
			t.Errorf("the %s item is still stored", st)
		}
		if err := e.svc.DeleteItem(as(bob), it.ID); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
	}
}

func TestListItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	a := e.seedItem(alice, ports.ContentDraft)
	e.clock.Advance(time.Minute)
	b := e.seedItem(bob, ports.ContentPublished)
	e.clock.Advance(time.Minute)
	c := e.seedItem(alice, ports.ContentDraft, func(c *ports.ContentItem) { c.ProjectID = "blog" })
	e.seedItem(olga, ports.ContentDraft)

	ids := func(items []ports.ContentItem) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = it.ID
		}
		return out
	}
	tests := []struct {
		f    ports.ContentFilter
		page ports.Page
		want []string
		more bool
	}{
		{want: []string{c.ID, b.ID, a.ID}},
		{f: ports.ContentFilter{ProjectID: project}, want: []string{b.ID, a.ID}},
		{f: ports.ContentFilter{Status: ports.ContentDraft}, want: []string{c.ID, a.ID}},
		{f: ports.ContentFilter{BriefID: b.BriefID}, want: []string{b.ID}},
		{f: ports.ContentFilter{ProjectID: project, Status: ports.ContentArchived}, want: []string{}},
		{page: ports.Page{Limit: 1}, want: []string{c.ID}, more: true},
	}
	for _, tt := range tests {
		got, next, err := e.svc.ListItems(as(alice), tt.f, tt.page)
		if err != nil || !slices.Equal(ids(got), tt.want) || (next != "") != tt.more {
			t.Errorf("ListItems(%+v, %+v) = %v %q %v, want %v, a next page: %v", tt.f, tt.page, ids(got), next, err, tt.want, tt.more)
		}
		if tt.more {
			rest, next, err := e.svc.ListItems(as(alice), tt.f, ports.Page{Limit: 2, Cursor: next})
			if err != nil || !slices.Equal(ids(rest), []string{b.ID, a.ID}) || next != "" {
				t.Errorf("the next page = %v %q %v, want %v", ids(rest), next, err, []string{b.ID, a.ID})
			}
		}
	}

	for _, tt := range []struct {
		f      ports.ContentFilter
		page   ports.Page
		fields []string
	}{
		{f: ports.ContentFilter{ProjectID: "a/b"}, fields: []string{"project_id"}},
		{f: ports.ContentFilter{BriefID: "brief-1"}, fields: []string{"brief_id"}},
		{f: ports.ContentFilter{Status: "done"}, fields: []string{"status"}},
		{f: ports.ContentFilter{ProjectID: " ", BriefID: "x", Status: "y"}, fields: []string{"project_id", "brief_id", "status"}},
		{page: ports.Page{Limit: 201}, fields: []string{"limit"}},
		{page: ports.Page{Cursor: "bogus"}, fields: []string{"cursor"}},
	} {
		_, _, err := e.svc.ListItems(as(alice), tt.f, tt.page)
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("ListItems(%+v, %+v) = %v, want invalid %v", tt.f, tt.page, err, tt.fields)
		}
	}
}
