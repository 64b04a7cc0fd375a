package content_test

import (
	"reflect"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

func TestCheckBannedWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		banned string
		title  string
		body   string
		want   string // the message, "" for no finding
	}{
		{name: "whole word", banned: "cheap", body: "A cheap trick.", want: `uses the banned word "cheap" once`},
		{name: "not inside a longer word", banned: "cheap", body: "Cheaper, cheapest, cheapskate, and 'acheap'."},
		{name: "ignores case", banned: "cheap", body: "CHEAP and Cheap", want: `uses the banned word "cheap" 2 times`},
		{name: "in the title", banned: "cheap", title: "Cheap wins", body: "Nothing here.", want: `uses the banned word "cheap" once`},
		{name: "title and body together", banned: "cheap", title: "cheap", body: "cheap", want: `uses the banned word "cheap" 2 times`},
		{name: "beside punctuation", banned: "cheap", body: "(cheap)… “cheap”—cheap-looking, cheap's", want: `uses the banned word "cheap" 4 times`},
		{name: "at the start and the end", banned: "cheap", body: "cheap as chips, and cheap", want: `uses the banned word "cheap" 2 times`},
		{name: "digits are part of words", banned: "web3", body: "web3 and web30", want: `uses the banned word "web3" once`},
		{name: "phrase", banned: "world class", body: "A world class team.", want: `uses the banned phrase "world class" once`},
		{name: "phrase across whitespace", banned: "world class", body: "World\n  CLASS service", want: `uses the banned phrase "world class" once`},
		{name: "phrase not inside words", banned: "world class", body: "underworld classic"},
		{name: "phrase hyphenated is another word", banned: "world class", body: "world-class"},
		{name: "a rejected match does not hide the next", banned: "na na", body: "bana na na", want: `uses the banned phrase "na na" once`},
		{name: "either apostrophe", banned: "don't", body: "Don’t panic; don't.", want: `uses the banned word "don't" 2 times`},
		{name: "unicode case", banned: "café", body: "CAFÉ culture", want: `uses the banned word "café" once`},
		{name: "unicode letters are word characters", banned: "café", body: "cafés and écafé"},
		{name: "cyrillic", banned: "дёшево", body: "Это ДЁШЕВО! Но не дёшевовато.", want: `uses the banned word "дёшево" once`},
		{name: "greek", banned: "φθηνό", body: "Πολύ ΦΘΗΝΌ.", want: `uses the banned word "φθηνό" once`},
		{name: "combining marks are word characters", banned: "cafe", body: "cafe\u0301"},
		{name: "scripts without spaces", banned: "便宜", body: "这个很便宜的东西", want: `uses the banned word "便宜" once`},
		{name: "regexp characters are literal", banned: "c++", body: "We love C++ and c+", want: `uses the banned word "c++" once`},
		{name: "dots are literal", banned: "e.g.", body: "eg, e.g. and ex", want: `uses the banned word "e.g." once`},
		{name: "blank term", banned: "   ", body: "anything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := content.Check(ports.Brand{BannedWords: []string{tt.banned}}, ports.Brief{}, tt.title, tt.body)
			var want []ports.ContentCheck
			if tt.want != "" {
				want = []ports.ContentCheck{{Kind: content.CheckBannedWord, Term: tt.banned, Message: tt.want}}
			} else {
				want = []ports.ContentCheck{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Check = %#v\nwant %#v", got, want)
			}
		})
	}
}

func TestCheckOrderAndKinds(t *testing.T) {
	t.Parallel()
	b := ports.Brand{
		BannedWords:    []string{"synergy", "cheap", "absent"},
		PreferredTerms: map[string]string{"utilize": "use", "e-mail": "email", "customers": "members", "nowhere": "x"},
	}
	brief := ports.Brief{MinWords: 50, MaxWords: 100}
	title := "Cheap synergy"
	body := "We utilize e-mail to reach customers. Cheap!"
	want := []ports.ContentCheck{
		{Kind: "banned_word", Term: "synergy", Message: `uses the banned word "synergy" once`},
		{Kind: "banned_word", Term: "cheap", Message: `uses the banned word "cheap" 2 times`},
		{Kind: "preferred_term", Term: "customers", Message: `uses "customers"; the brand prefers "members"`},
		{Kind: "preferred_term", Term: "e-mail", Message: `uses "e-mail"; the brand prefers "email"`},
		{Kind: "preferred_term", Term: "utilize", Message: `uses "utilize"; the brand prefers "use"`},
		{Kind: "length", Message: "the body has 7 words; the brief asks for at least 50"},
	}
	for range 3 { // map order must not show
		if got := content.Check(b, brief, title, body); !reflect.DeepEqual(got, want) {
			t.Fatalf("Check =\n%#v\nwant\n%#v", got, want)
		}
	}
}

func TestCheckLength(t *testing.T) {
	t.Parallel()
	tests := []struct {
		min, max int
		body     string
		want     string
	}{
		{body: "one two three"},
		{min: 3, max: 3, body: "one two three"},
		{min: 4, body: "one two three", want: "the body has 3 words; the brief asks for at least 4"},
		{min: 1, body: "", want: "the body has 0 words; the brief asks for at least 1"},
		{max: 2, body: "one\ntwo\t three", want: "the body has 3 words; the brief asks for at most 2"},
		{max: 2, body: "one", want: ""},
		{min: 2, max: 5, body: "one", want: "the body has 1 word; the brief asks for at least 2"},
	}
	for _, tt := range tests {
		got := content.Check(ports.Brand{}, ports.Brief{MinWords: tt.min, MaxWords: tt.max}, "A long title does not count", tt.body)
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%d..%d %q: %v, want none", tt.min, tt.max, tt.body, got)
		case tt.want != "" && (len(got) != 1 || got[0].Kind != content.CheckLength || got[0].Message != tt.want || got[0].Term != ""):
			t.Errorf("%d..%d %q: %v, want %q", tt.min, tt.max, tt.body, got, tt.want)
		}
	}
}

func TestCheckNeverNil(t *testing.T) {
	t.Parallel()
	if got := content.Check(ports.Brand{}, ports.Brief{}, "", ""); got == nil || len(got) != 0 {
		t.Errorf("Check = %#v, want an empty slice", got)
	}
	if got := content.Check(content.DefaultBrand("org-1", project), ports.Brief{}, "Title", "Body"); got == nil || len(got) != 0 {
		t.Errorf("Check with the default brand = %#v", got)
	}
}
