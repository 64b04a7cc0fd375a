package content_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestCreateBrief(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	b, err := e.svc.CreateBrief(as(alice), content.BriefInput{
		ProjectID: project, Title: "  Faster approvals ", Goal: " Book demos ", Audience: "CFOs", Channel: "blog",
		Keywords: []string{"expenses", " ", "Expenses", "approvals "}, CTA: "Book a demo", MinWords: 300, MaxWords: 800,
		Notes: "Mention the mobile app.",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ports.Brief{ID: b.ID, OrgID: alice.OrgID, ProjectID: project, CreatedBy: alice.UserID, Title: "Faster approvals",
		Goal: "Book demos", Audience: "CFOs", Channel: "blog", Format: content.DefaultFormat,
		Keywords: []string{"expenses", "approvals"}, CTA: "Book a demo", MinWords: 300, MaxWords: 800,
		Notes: "Mention the mobile app.", CreatedAt: fixture.Epoch}
	if !reflect.DeepEqual(b, want) || !ports.IsID(b.ID) {
		t.Fatalf("CreateBrief =\n%+v\nwant\n%+v", b, want)
	}
	got, err := e.svc.Brief(as(bob), b.ID)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Brief = %+v, %v", got, err)
	}
	if b := e.newBrief(alice, content.BriefInput{Format: "linkedin post", MaxWords: 100}); b.Format != "linkedin post" || b.MinWords != 0 {
		t.Errorf("brief %+v", b)
	}
}

func TestCreateBriefInvalid(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("ß", n) }
	ok := content.BriefInput{ProjectID: project, Title: "Title"}
	with := func(change func(in *content.BriefInput)) content.BriefInput {
		in := ok
		change(&in)
		return in
	}
	tests := []struct {
		name   string
		in     content.BriefInput
		fields []string
	}{
		{name: "at the limits", in: content.BriefInput{ProjectID: strings.Repeat("p", 100), Title: long(200), Goal: long(2000),
			Audience: long(1000), Channel: long(50), Format: long(50), Keywords: slices.Repeat([]string{long(50)}, 20),
			CTA: long(200), MinWords: 20000, MaxWords: 20000, Notes: long(5000)}},
		{name: "project missing", in: with(func(in *content.BriefInput) { in.ProjectID = "" }), fields: []string{"project_id"}},
		{name: "project malformed", in: with(func(in *content.BriefInput) { in.ProjectID = "a b" }), fields: []string{"project_id"}},
		{name: "title missing", in: with(func(in *content.BriefInput) { in.Title = "  " }), fields: []string{"title"}},
		{name: "title", in: with(func(in *content.BriefInput) { in.Title = long(201) }), fields: []string{"title"}},
		{name: "goal", in: with(func(in *content.BriefInput) { in.Goal = long(2001) }), fields: []string{"goal"}},
		{name: "audience", in: with(func(in *content.BriefInput) { in.Audience = long(1001) }), fields: []string{"audience"}},
		{name: "channel", in: with(func(in *content.BriefInput) { in.Channel = long(51) }), fields: []string{"channel"}},
		{name: "format", in: with(func(in *content.BriefInput) { in.Format = long(51) }), fields: []string{"format"}},
		{name: "keywords", in: with(func(in *content.BriefInput) {
			for i := range 21 {
				in.Keywords = append(in.Keywords, strings.Repeat("k", i+1))
			}
		}), fields: []string{"keywords"}},
		{name: "keyword", in: with(func(in *content.BriefInput) { in.Keywords = []string{"a", long(51)} }), fields: []string{"keywords[1]"}},
		{name: "cta", in: with(func(in *content.BriefInput) { in.CTA = long(201) }), fields: []string{"cta"}},
		{name: "notes", in: with(func(in *content.BriefInput) { in.Notes = long(5001) }), fields: []string{"notes"}},
		{name: "min words negative", in: with(func(in *content.BriefInput) { in.MinWords = -1 }), fields: []string{"length.min_words"}},
		{name: "min words too many", in: with(func(in *content.BriefInput) { in.MinWords = 20001 }), fields: []string{"length.min_words"}},
		{name: "max words too many", in: with(func(in *content.BriefInput) { in.MaxWords = 20001 }), fields: []string{"length.max_words"}},
		{name: "min above max", in: with(func(in *content.BriefInput) { in.MinWords, in.MaxWords = 500, 400 }), fields: []string{"length.max_words"}},
		{name: "min alone", in: with(func(in *content.BriefInput) { in.MinWords = 500 })},
		{name: "everything", in: content.BriefInput{Goal: long(2001), MinWords: -5, MaxWords: 30000},
			fields: []string{"project_id", "title", "goal", "length.min_words", "length.max_words"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, content.Config{})
			_, err := e.svc.CreateBrief(as(alice), tt.in)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("CreateBrief = %v", err)
				}
				return
			}
			if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), tt.fields) {
				t.Errorf("CreateBrief = %v (fields %v), want invalid %v", err, fieldsOf(err), tt.fields)
			}
			if briefs, _, _ := e.svc.ListBriefs(as(alice), "", ports.Page{}); len(briefs) != 0 {
				t.Error("an invalid brief was stored")
			}
		})
	}
}

func TestBriefNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	b := e.newBrief(alice, content.BriefInput{})
	for _, tt := range []struct {
		p  ports.Principal
		id string
	}{{olga, b.ID}, {alice, absent}, {alice, "not-a-uuid"}, {alice, ""}} {
		if _, err := e.svc.Brief(as(tt.p), tt.id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Brief(%s, %q) = %v, want not_found", tt.p.UserID, tt.id, err)
		}
	}
	if _, err := e.svc.Brief(context.Background(), b.ID); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
	if _, err := e.svc.CreateBrief(context.Background(), content.BriefInput{ProjectID: project, Title: "t"}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("CreateBrief without a principal: %v", err)
	}
}

func TestListBriefs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	b1 := e.newBrief(alice, content.BriefInput{})
	b2 := e.newBrief(bob, content.BriefInput{ProjectID: "blog"})
	b3 := e.newBrief(alice, content.BriefInput{})
	e.newBrief(olga, content.BriefInput{})

	ids := func(bs []ports.Brief) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = b.ID
		}
		return out
	}
	tests := []struct {
		project string
		page    ports.Page
		want    []string
		more    bool
	}{
		{want: []string{b3.ID, b2.ID, b1.ID}},
		{project: project, want: []string{b3.ID, b1.ID}},
		{project: "blog", want: []string{b2.ID}},
		{project: "none", want: []string{}},
		{page: ports.Page{Limit: 2}, want: []string{b3.ID, b2.ID}, more: true},
	}
	for _, tt := range tests {
		got, next, err := e.svc.ListBriefs(as(alice), tt.project, tt.page)
		if err != nil || !slices.Equal(ids(got), tt.want) || (next != "") != tt.more {
			t.Errorf("ListBriefs(%q, %+v) = %v %q %v, want %v, a next page: %v", tt.project, tt.page, ids(got), next, err, tt.want, tt.more)
		}
		if tt.more {
			rest, next, err := e.svc.ListBriefs(as(alice), tt.project, ports.Page{Limit: 2, Cursor: next})
			if err != nil || !slices.Equal(ids(rest), []string{b1.ID}) || next != "" {
				t.Errorf("the next page = %v %q %v, want %v", ids(rest), next, err, []string{b1.ID})
			}
		}
	}

	for _, tt := range []struct {
		project string
		page    ports.Page
		field   string
	}{
		{project: "a b", field: "project_id"},
		{page: ports.Page{Limit: -1}, field: "limit"},
		{page: ports.Page{Limit: content.MaxPageLimit + 1}, field: "limit"},
		{page: ports.Page{Cursor: "bogus"}, field: "cursor"},
	} {
		_, _, err := e.svc.ListBriefs(as(alice), tt.project, tt.page)
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), []string{tt.field}) {
			t.Errorf("ListBriefs(%q, %+v) = %v, want invalid %s", tt.project, tt.page, err, tt.field)
		}
	}
	if _, _, err := e.svc.ListBriefs(context.Background(), "", ports.Page{}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
}
