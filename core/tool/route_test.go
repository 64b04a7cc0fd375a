package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// routeRegistry holds the shape of the real catalogue: 9 reads and 4 writes
// of cloud (one read core), 5 and 6 of content, 2 and 3 of spec, 5 reads of
// scm.
func routeRegistry(t *testing.T) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	add := func(area tool.Area, reads, writes int) {
		for i := range reads + writes {
			tl := tool.Tool{Name: fmt.Sprintf("%s_%d", area, i), Description: "a tool", Area: area, Core: i == 0,
				Effect: tool.EffectRead, Schema: json.RawMessage(`{"type":"object"}`),
				Run: func(context.Context, json.RawMessage) (any, error) { return nil, nil }}
			if i >= reads {
				tl.Effect, tl.Summary = tool.EffectWrite, func(json.RawMessage) string { return "change" }
			}
			if err := r.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(tool.AreaCloud, 9, 4)
	add(tool.AreaContent, 5, 6)
	add(tool.AreaSpec, 2, 3)
	add(tool.AreaSCM, 5, 0)
	return r
}

func offered(defs []ports.ToolDefinition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// TestRouteFollowingKeepsTheConversationsAreas: a message that names no
// area offers the writes of the areas the conversation used lately; on
// another area's page, those writes come before that page's reads, within
// the limit; names the registry does not know change nothing.
func TestRouteFollowingKeepsTheConversationsAreas(t *testing.T) {
	t.Parallel()
	r := routeRegistry(t)
	writes := []string{"spec_2", "spec_3", "spec_4"}

	got := offered(r.RouteFollowing(nil, "great, add another one", []string{"spec_2"}, 0))
	for _, w := range writes {
		if !slices.Contains(got, w) {
			t.Errorf("without a page: %s not offered in %v", w, got)
		}
	}
	if before := offered(r.Route(nil, "great, add another one", 0)); slices.Contains(before, "spec_2") {
		t.Errorf("Route offers a write without a clue: %v", before)
	}

	// The cloud page (13 tools), the content and spec conversation: every
	// write of the three areas (13), then the core reads, then reads.
	got = offered(r.RouteFollowing(&tool.PageContext{CurrentPage: "#/cloud"}, "yes, go ahead", []string{"unknown_tool", "content_7", "spec_2"}, 0))
	if len(got) != tool.DefaultMaxTools {
		t.Errorf("%d tools, want %d", len(got), tool.DefaultMaxTools)
	}
	for _, w := range []string{"cloud_9", "cloud_12", "content_5", "content_10", "spec_2", "spec_4", "cloud_0", "content_0", "spec_0", "scm_0"} {
		if !slices.Contains(got, w) {
			t.Errorf("on the cloud page, %s not offered in %v", w, got)
		}
	}
}
