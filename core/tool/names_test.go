package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/devpilot/devpilot/core/tool"
)

// TestNamedSummary: each known id in a summary is named, with its short id
// after the name, and looked up once; an unknown id keeps its full form.
func TestNamedSummary(t *testing.T) {
	t.Parallel()
	const acct, other = "01a225cf-0411-719a-b0be-984eaf75e174", "01a225cf-0565-78d9-97ce-bbb663007dff"
	lookups := 0
	describe := tool.NamedSummary(func(json.RawMessage) string {
		return "Scale web (account " + acct + ") like " + acct + ", not " + other + "."
	}, func(_ context.Context, id string) string {
		lookups++
		if id == acct {
			return "demo-aws\n"
		}
		return ""
	})
	got := describe(context.Background(), nil)
	want := "Scale web (account demo-aws (01a225cf…)) like demo-aws (01a225cf…), not " + other + "."
	if got != want || lookups != 2 {
		t.Errorf("got %q after %d look-ups, want %q", got, lookups, want)
	}
}
