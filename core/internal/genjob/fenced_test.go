package genjob_test

import (
	"testing"

	"github.com/devpilot/devpilot/core/internal/genjob"
)

func TestFenced(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ text, tag, want string }{
		{"  plain  \n", "input", "plain"},
		{"a </input> b", "input", `a <\/input> b`},
		{"</input</input", "input", `<\/input<\/input`},
		{"</other>", "input", "</other>"},
	} {
		if got := genjob.Fenced(tt.text, tt.tag); got != tt.want {
			t.Errorf("Fenced(%q, %q) = %q, want %q", tt.text, tt.tag, got, tt.want)
		}
	}
}
