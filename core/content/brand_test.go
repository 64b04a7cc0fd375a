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

func TestBrandDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	e.putBrand(olga, content.BrandInput{Name: "Olga's brand", BannedWords: []string{"cheap"}})

	b, err := e.svc.Brand(as(alice), project)
	if err != nil {
		t.Fatal(err)
	}
	want := content.DefaultBrand(alice.OrgID, project)
	if !reflect.DeepEqual(b, want) {
		t.Errorf("Brand = %+v, want the defaults %+v", b, want)
	}
	if b.Version != 0 || !b.UpdatedAt.IsZero() || b.Voice == "" || b.Tone == nil || b.Values == nil ||
		b.BannedWords == nil || b.PreferredTerms == nil || b.Examples == nil {
		t.Errorf("defaults %+v", b)
	}
	if b, _ := e.svc.Brand(as(olga), project); b.Name != "Olga's brand" || b.Version != 1 {
		t.Errorf("olga's brand %+v", b)
	}
}

func TestBrandErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	for _, id := range []string{"", "has space", "slash/y", strings.Repeat("p", content.MaxProjectIDLen+1), "ünïcode"} {
		_, err := e.svc.Brand(as(alice), id)
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), []string{"project_id"}) {
			t.Errorf("Brand(%q) = %v, want invalid project_id", id, err)
		}
		_, err = e.svc.PutBrand(as(alice), id, content.BrandInput{})
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), []string{"project_id"}) {
			t.Errorf("PutBrand(%q) = %v, want invalid project_id", id, err)
		}
	}
	for _, id := range []string{"p", "Acme.web_site:2-b", strings.Repeat("p", content.MaxProjectIDLen)} {
		if _, err := e.svc.Brand(as(alice), id); err != nil {
			t.Errorf("Brand(%q) = %v", id, err)
		}
	}
	if _, err := e.svc.Brand(context.Background(), project); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
	if _, err := e.svc.PutBrand(context.Background(), project, content.BrandInput{}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("PutBrand without a principal: %v", err)
	}
}

func TestPutBrand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	b := e.putBrand(alice, content.BrandInput{
		Name:           "  Acme  ",
		Voice:          "Warm and direct.",
		Tone:           []string{" friendly ", "", "Friendly", "bold"},
		Audience:       "Finance teams",
		Values:         []string{"honesty", "  "},
		BannedWords:    []string{"cheap", "Cheap ", "  ", "world class", "CHEAP"},
		PreferredTerms: map[string]string{" utilize ": " use ", "": ""},
		StyleGuide:     "  Use the Oxford comma.\n",
		Examples:       []string{"", "We ship on Fridays."},
	})
	want := ports.Brand{OrgID: alice.OrgID, ProjectID: project, Name: "Acme", Voice: "Warm and direct.",
		Tone: []string{"friendly", "bold"}, Audience: "Finance teams", Values: []string{"honesty"},
		BannedWords: []string{"cheap", "world class"}, PreferredTerms: map[string]string{"utilize": "use"},
		StyleGuide: "Use the Oxford comma.", Examples: []string{"We ship on Fridays."},
		Version: 1, UpdatedBy: alice.UserID, UpdatedAt: fixture.Epoch}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("PutBrand =\n%+v\nwant\n%+v", b, want)
	}
	if got, _ := e.svc.Brand(as(bob), project); !reflect.DeepEqual(got, want) {
		t.Errorf("Brand = %+v", got)
	}

	// A replacement clears what it leaves out and counts the version up.
	e.clock.Advance(time.Minute)
	b, err := e.svc.PutBrand(as(bob), project, content.BrandInput{Name: "Acme", IfVersion: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != 2 || b.UpdatedBy != bob.UserID || !b.UpdatedAt.Equal(fixture.Epoch.Add(time.Minute)) ||
		len(b.BannedWords) != 0 || b.BannedWords == nil || b.PreferredTerms == nil || b.Voice != "" {
		t.Errorf("second PutBrand = %+v", b)
	}
	if _, err := e.svc.PutBrand(as(alice), "other-project", content.BrandInput{IfVersion: ptr(0)}); err != nil {
		t.Errorf("IfVersion 0 without settings: %v", err)
	}
}

func TestPutBrandStaleVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	tests := []struct {
		name      string
		ifVersion int
		stored    int // versions stored before
		message   string
	}{
		{name: "none stored", ifVersion: 1, message: "the brand settings of project web-site are at version 0, not 1"},
		{name: "behind", ifVersion: 1, stored: 2, message: "are at version 2, not 1"},
		{name: "zero when stored", ifVersion: 0, stored: 2, message: "are at version 2, not 0"},
	}
	for _, tt := range tests {
		e := newEnv(t, content.Config{})
		for range tt.stored {
			e.putBrand(alice, content.BrandInput{Name: "Acme"})
		}
		_, err := e.svc.PutBrand(as(alice), project, content.BrandInput{Name: "Changed", IfVersion: ptr(tt.ifVersion)})
		if !errors.Is(err, ports.ErrPreconditionFailed) || errCode(err) != content.CodeStaleVersion || !strings.Contains(err.Error(), tt.message) {
			t.Errorf("%s: %v, want stale_version saying %q", tt.name, err, tt.message)
		}
		if b, _ := e.svc.Brand(as(alice), project); b.Version != tt.stored || b.Name == "Changed" {
			t.Errorf("%s: stored %+v", tt.name, b)
		}
	}

	_, err := e.svc.PutBrand(as(alice), project, content.BrandInput{IfVersion: ptr(-1)})
	if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), []string{"version"}) {
		t.Errorf("IfVersion -1: %v", err)
	}
}

func TestPutBrandRace(t *testing.T) {
	t.Parallel()
	race := ports.Errorf(ports.KindPreconditionFailed, "another replacement won")

	e := newEnv(t, content.Config{})
	e.putBrand(alice, content.BrandInput{Name: "v1"})
	e.content.putBrandErr = race
	b, err := e.svc.PutBrand(as(alice), project, content.BrandInput{Name: "v2"})
	if err != nil || b.Version != 2 || b.Name != "v2" {
		t.Errorf("an unconditional replacement tries again: %+v, %v", b, err)
	}

	e.content.putBrandErr = race
	_, err = e.svc.PutBrand(as(alice), project, content.BrandInput{Name: "v3", IfVersion: ptr(2)})
	if !errors.Is(err, ports.ErrPreconditionFailed) || errCode(err) != content.CodeStaleVersion || !errors.Is(err, race) {
		t.Errorf("a conditional replacement that lost a race: %v", err)
	}
	if b, _ := e.svc.Brand(as(alice), project); b.Name != "v2" {
		t.Errorf("stored %+v", b)
	}

	e.content.putBrandErr = ports.Errorf(ports.KindUnavailable, "database down")
	if _, err := e.svc.PutBrand(as(alice), project, content.BrandInput{}); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("a store error: %v", err)
	}
}

func TestPutBrandInvalid(t *testing.T) {
	t.Parallel()
	many := func(n int, s string) []string { return slices.Repeat([]string{s}, n) }
	distinct := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("word%d", i)
		}
		return out
	}
	terms := func(n int) map[string]string {
		out := map[string]string{}
		for _, w := range distinct(n) {
			out[w] = "use-" + w
		}
		return out
	}
	long := func(n int) string { return strings.Repeat("é", n) }
	tests := []struct {
		name   string
		in     content.BrandInput
		fields []string
	}{
		{name: "at the limits", in: content.BrandInput{Name: long(200), Voice: long(2000), Tone: many(20, long(50)),
			Audience: long(1000), Values: many(20, long(200)), BannedWords: distinct(200), PreferredTerms: terms(200),
			StyleGuide: long(20000), Examples: many(10, long(5000))}},
		{name: "name", in: content.BrandInput{Name: long(201)}, fields: []string{"name"}},
		{name: "voice", in: content.BrandInput{Voice: long(2001)}, fields: []string{"voice"}},
		{name: "tone entries", in: content.BrandInput{Tone: append(distinct(20), "extra")}, fields: []string{"tone"}},
		{name: "tone entry", in: content.BrandInput{Tone: []string{"ok", long(51)}}, fields: []string{"tone[1]"}},
		{name: "audience", in: content.BrandInput{Audience: long(1001)}, fields: []string{"audience"}},
		{name: "values", in: content.BrandInput{Values: many(21, "v")}, fields: []string{"values"}},
		{name: "value", in: content.BrandInput{Values: []string{long(201)}}, fields: []string{"values[0]"}},
		{name: "banned words", in: content.BrandInput{BannedWords: distinct(201)}, fields: []string{"banned_words"}},
		{name: "repeated banned words count once", in: content.BrandInput{BannedWords: many(500, "cheap")}},
		{name: "banned word", in: content.BrandInput{BannedWords: []string{"", "", long(101)}}, fields: []string{"banned_words[2]"}},
		{name: "preferred terms", in: content.BrandInput{PreferredTerms: terms(201)}, fields: []string{"preferred_terms"}},
		{name: "term to avoid", in: content.BrandInput{PreferredTerms: map[string]string{long(101): "x"}}, fields: []string{`preferred_terms["` + long(101) + `"]`}},
		{name: "preferred term", in: content.BrandInput{PreferredTerms: map[string]string{"utilize": long(101)}}, fields: []string{`preferred_terms["utilize"]`}},
		{name: "preferred term missing", in: content.BrandInput{PreferredTerms: map[string]string{"utilize": " "}}, fields: []string{`preferred_terms["utilize"]`}},
		{name: "term to avoid missing", in: content.BrandInput{PreferredTerms: map[string]string{" ": "use"}}, fields: []string{"preferred_terms"}},
		{name: "terms differing in case", in: content.BrandInput{PreferredTerms: map[string]string{"Utilize": "use", "utilize": "use"}}, fields: []string{`preferred_terms["utilize"]`}},
		{name: "style guide", in: content.BrandInput{StyleGuide: long(20001)}, fields: []string{"style_guide"}},
		{name: "examples", in: content.BrandInput{Examples: many(11, "e")}, fields: []string{"examples"}},
		{name: "example", in: content.BrandInput{Examples: []string{"ok", long(5001)}}, fields: []string{"examples[1]"}},
		{name: "all at once", in: content.BrandInput{Name: long(201), Tone: []string{long(51)}, StyleGuide: long(20001), IfVersion: ptr(-2)},
			fields: []string{"name", "tone[0]", "style_guide", "version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, content.Config{})
			_, err := e.svc.PutBrand(as(alice), project, tt.in)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("PutBrand = %v", err)
				}
				return
			}
			if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), tt.fields) {
				t.Errorf("PutBrand = %v (fields %v), want invalid %v", err, fieldsOf(err), tt.fields)
			}
			if b, _ := e.svc.Brand(as(alice), project); b.Version != 0 {
				t.Error("invalid settings were stored")
			}
		})
	}
}
