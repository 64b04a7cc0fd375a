package ports_test

import (
	"testing"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

func TestTextFaultAndCleanText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		fault bool
		clean string
	}{
		{"plain", "Ship the release, please.", false, "Ship the release, please."},
		{"tab newline cr", "a\tb\nc\r\n", false, "a\tb\nc\r\n"},
		{"non-ASCII", "Grüße, 日本, emoji 🚀, RTL שלום with LRM \u200e", false, "Grüße, 日本, emoji 🚀, RTL שלום with LRM \u200e"},
		{"replacement character", "a\uFFFDb", false, "a\uFFFDb"},
		{"empty", "", false, ""},
		{"NUL", "a\x00b", true, "ab"},
		{"bell and escape", "\x07ring\x1b[31m", true, "ring[31m"},
		{"unit separator", "a\x1fb", true, "ab"},
		{"BOM", "\uFEFFtitle", true, "title"},
		{"bidi override", "admin\u202Egnp.exe", true, "admingnp.exe"},
		{"bidi isolate", "x\u2066y\u2069", true, "xy"},
		{"invalid UTF-8", "a\xffb", true, "a\uFFFDb"},
		{"encoded surrogate", "a\xed\xa0\x80b", true, "a\uFFFD\uFFFD\uFFFDb"},
		{"truncated rune", "ab\xe2\x82", true, "ab\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ports.TextFault(tt.in); (got != "") != tt.fault {
				t.Errorf("TextFault(%q) = %q, want fault %v", tt.in, got, tt.fault)
			}
			got := ports.CleanText(tt.in)
			if got != tt.clean {
				t.Errorf("CleanText(%q) = %q, want %q", tt.in, got, tt.clean)
			}
			if f := ports.TextFault(got); f != "" {
				t.Errorf("CleanText(%q) = %q still has a fault: %s", tt.in, got, f)
			}
		})
	}
}

func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"", "a\x00b", "\uFEFF\u202E", "\xff\xfe", "plain text"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ports.CleanText(s)
		if !utf8.ValidString(got) || ports.TextFault(got) != "" {
			t.Fatalf("CleanText(%q) = %q, not clean", s, got)
		}
		if ports.TextFault(s) == "" && got != s {
			t.Fatalf("CleanText changed acceptable text %q to %q", s, got)
		}
	})
}

func TestCleanJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"clean stays byte for byte", `{"b": 1, "a": "x"}`, `{"b": 1, "a": "x"}`},
		{"tab escape is text", `{"a":"x\ty"}`, `{"a":"x\ty"}`},
		{"escaped backslash then u", `{"a":"C:\\u0000dir"}`, `{"a":"C:\\u0000dir"}`},
		{"NUL escape", `{"service":"check\u0000out","n":2}`, `{"n":2,"service":"checkout"}`},
		{"control in a key and an array", `{"k\u0007":["a\u001bb",1.50]}`, `{"k":["ab",1.50]}`},
		{"lone surrogate", `["x\ud800y"]`, `["x` + "\uFFFD" + `y"]`},
		{"emoji pair kept", `["\ud83d\ude80\u202e"]`, `["🚀"]`},
		{"BOM and bidi raw", "[\"\ufeffa\u2066b\"]", `["ab"]`},
		{"not JSON is left to its reader", `{"a":"\u0000"`, `{"a":"\u0000"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(ports.CleanJSON([]byte(tt.in))); got != tt.want {
				t.Errorf("CleanJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestIsID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"01a2146f-2c0d-79be-93ff-5cf1a77bd210":  true,
		"01A2146F-2C0D-79BE-93FF-5CF1A77BD210":  true,
		"":                                      false,
		"01a2146f2c0d79be93ff5cf1a77bd210":      false,
		"01a2146f-2c0d-79be-93ff-5cf1a77bd21g":  false,
		"01a2146f-2c0d-79be-93ff_5cf1a77bd210":  false,
		"01a2146f-2c0d-79be-93ff-5cf1a77bd2100": false,
		"x1a2146f-2c0d-79be-93ff-5cf1a77bd210":  false,
	} {
		if got := ports.IsID(s); got != want {
			t.Errorf("IsID(%q) = %v, want %v", s, got, want)
		}
	}
}
