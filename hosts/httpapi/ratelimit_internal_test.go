package httpapi

import (
	"maps"
	"slices"
	"testing"
)

// costlyOperations are the operations that take from the caller's rate
// bucket: the content generation ones through limited in contentTable, the
// others through the costly route option. Accepting an invitation, public,
// takes from the bucket of the client's address.
var costlyOperations = []string{
	"POST /api/v1/agent/chat",
	"POST /api/v1/voice/session", "POST /api/v1/voice/calls", "POST /api/v1/voice/calls/{call_id}/metering",
	"POST /audio/transcribe", "POST /api/v1/audio/transcribe",
	"POST /pse/sessions/{session_id}/generate", "POST /api/v1/pse/sessions/{session_id}/generate",
	"POST /content/generate", "POST /api/v1/content/generate",
	"POST /api/v1/invitations/accept",
}

func TestCostlyOperations(t *testing.T) {
	t.Parallel()
	s := fullServer()
	ops := expectedOperations(t, s)
	var marked []string
	for _, rt := range s.registered {
		if rt.costly {
			marked = append(marked, rt.method+" "+routeParam.ReplaceAllString(rt.pattern, "{$1}"))
		}
	}
	var want []string
	for _, op := range costlyOperations {
		if _, ok := ops[op]; !ok {
			t.Errorf("%s is not served", op)
		}
		if _, _, dispatched := contentDispatchPattern(ops[op].pattern); !dispatched {
			want = append(want, op)
		}
	}
	slices.Sort(marked)
	slices.Sort(want)
	if !slices.Equal(marked, want) {
		t.Errorf("routes marked costly:\n got %v\nwant %v", marked, want)
	}

	documented := documentedOperations(loadOpenAPI(t))
	for _, op := range slices.Sorted(maps.Keys(documented)) {
		resp := documented[op].Responses.Value("429")
		if slices.Contains(costlyOperations, op) && (resp == nil || resp.Ref != "#/components/responses/RateLimited") {
			t.Errorf("%s is costly: document 429 as #/components/responses/RateLimited", op)
		}
	}
}
