package ports_test

import (
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestOneLineAndLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in          string
		n           int
		one, capped string
	}{
		{"", 10, "", ""},
		{"  a \t b\n\nc  ", 10, "a b c", "a b c"},
		{"a\x00b\x1bc", 10, "a\x00b\x1bc", "a b c"},
		{"fix the\u2028bug", 100, "fix the bug", "fix the bug"},
		{"héllo wörld", 3, "héllo wörld", "hé…"},
		{"héllo", 2, "héllo", "h…"},
	} {
		if got := ports.OneLine(tt.in); got != tt.one {
			t.Errorf("OneLine(%q) = %q, want %q", tt.in, got, tt.one)
		}
		if got := ports.Line(tt.in, tt.n); got != tt.capped {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.capped)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in      string
		n       int
		clipped string
		cut     bool
	}{
		{"", 0, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"aé", 2, "a", true}, // é is two bytes: never split
		{"日本", 4, "日", true},
		{"日本", 2, "", true},
		{"日本", 6, "日本", false},
	} {
		got, cut := ports.ClipBytes(tt.in, tt.n)
		if got != tt.clipped || cut != tt.cut {
			t.Errorf("ClipBytes(%q, %d) = %q, %v, want %q, %v", tt.in, tt.n, got, cut, tt.clipped, tt.cut)
		}
		want := tt.clipped
		if tt.cut {
			want += "…"
		}
		if got := ports.Clip(tt.in, tt.n); got != want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, want)
		}
	}
}

func TestFieldsError(t *testing.T) {
	t.Parallel()
	if err := ports.FieldsError(ports.KindInvalid); err != nil {
		t.Errorf("FieldsError() = %v, want nil", err)
	}
	fields := []ports.FieldError{{Field: "name", Reason: "required"}, {Field: "limit", Reason: "must be 1 to 200"}}
	for _, tt := range []struct {
		kind ports.Kind
		msg  string
	}{
		{ports.KindMalformed, "malformed request (name: required; limit: must be 1 to 200)"},
		{ports.KindInvalid, "invalid request (name: required; limit: must be 1 to 200)"},
	} {
		e, ok := ports.AsError(ports.FieldsError(tt.kind, fields...))
		if !ok || e.Kind != tt.kind || e.Message != tt.msg || len(e.Fields) != 2 {
			t.Errorf("FieldsError(%s) = %#v, want %q", tt.kind, e, tt.msg)
		}
	}
}
