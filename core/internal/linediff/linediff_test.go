package linediff_test

import (
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/internal/linediff"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n",
			"--- v1\n+++ v2\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added at the end", "a\n", "a\nb\n",
			"--- v1\n+++ v2\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from nothing", "", "x\n",
			"--- v1\n+++ v2\n@@ -0,0 +1 @@\n+x\n"},
		{"two hunks far apart", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n",
			"--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n-1\n+X\n 2\n@@ -9,2 +9,2 @@\n 9\n-10\n+Y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := linediff.Unified("v1", "v2", tt.a, tt.b, 1); got != tt.want {
				t.Errorf("Unified =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestUnifiedLarge shows a change past MaxCells is still a correct diff:
// every old line removed and every new one added.
func TestUnifiedLarge(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString("a" + strings.Repeat("x", i%7) + "\n")
		b.WriteString("b" + strings.Repeat("y", i%5) + "\n")
	}
	got := linediff.Unified("v1", "v2", a.String(), b.String(), 3)
	if strings.Count(got, "\n-a") != 3000 || strings.Count(got, "\n+b") != 3000 {
		t.Errorf("a large diff has %d removed and %d added lines, want 3000 each", strings.Count(got, "\n-a"), strings.Count(got, "\n+b"))
	}
}
