package app_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// callsAtOnce sends n requests together and returns their statuses and
// bodies; request(i) makes the i-th.
func (st *stack) callsAtOnce(n int, request func(i int) (int, []byte)) ([]int, [][]byte) {
	codes, bodies := make([]int, n), make([][]byte, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			codes[i], bodies[i] = request(i)
		})
	}
	close(start)
	wg.Wait()
	return codes, bodies
}

// tally counts the statuses, failing the test for one not in allowed, or a
// refusal whose body lacks its code.
func tally(t *testing.T, what string, codes []int, bodies [][]byte, allowed map[int]string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for i, c := range codes {
		code, ok := allowed[c]
		if !ok || !strings.Contains(string(bodies[i]), code) {
			t.Errorf("%s %d: %d %s", what, i, c, bodies[i])
		}
		out[c]++
	}
	return out
}

// TestCapsHoldUnderConcurrency: the last-admin rule, the own-token limit
// and a specification session's size limit hold when the requests that
// would pass them arrive together. On both databases (the races were lost
// on PostgreSQL).
func TestCapsHoldUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead := st.admin("lead@example.com")
			ana, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ana@example.com", OrgName: "acme", Role: ports.RoleAdmin})
			if err != nil {
				t.Fatal(err)
			}
			var leadID string
			if code, raw, _ := st.call(lead, "GET", "/api/v1/me", nil); code == 200 {
				var me struct{ User struct{ ID string } }
				_ = json.Unmarshal(raw, &me)
				leadID = me.User.ID
			}
			if leadID == "" {
				t.Fatal("no id for the lead")
			}

			// Two admins make each other members at once, round after round.
			for round := range 5 {
				tokens, targets := []string{lead, ana.Token}, []string{ana.User.ID, leadID}
				codes, bodies := st.callsAtOnce(2, func(i int) (int, []byte) {
					code, raw, _ := st.call(tokens[i], "PATCH", "/api/v1/members/"+targets[i], map[string]string{"role": "member"})
					return code, raw
				})
				n := tally(t, "demote", codes, bodies, map[int]string{200: `"role":"member"`, 409: "last_admin", 403: "forbidden"})
				if n[200] != 1 {
					t.Fatalf("round %d: two admins demoting each other: %v, want exactly one 200", round, codes)
				}
				// The one demoted is promoted again by the one left.
				left, demoted := lead, ana.User.ID
				if codes[1] == 200 {
					left, demoted = ana.Token, leadID
				}
				if code, raw, _ := st.call(left, "PATCH", "/api/v1/members/"+demoted, map[string]string{"role": "admin"}); code != 200 {
					t.Fatalf("round %d: promote again: %d %s", round, code, raw)
				}
			}

			// Own tokens: 40 in all (the CLI's, and 39 made here); 20 more at once.
			for range 39 {
				if code, raw, _ := st.call(ana.Token, "POST", "/api/v1/tokens", map[string]any{"name": "ci", "expires_in_days": 30}); code != 201 {
					t.Fatalf("create a token: %d %s", code, raw)
				}
			}
			codes, bodies := st.callsAtOnce(20, func(int) (int, []byte) {
				code, raw, _ := st.call(ana.Token, "POST", "/api/v1/tokens", map[string]any{"name": "burst", "expires_in_days": 30})
				return code, raw
			})
			if n := tally(t, "create a token", codes, bodies, map[int]string{201: "dp_", 409: "too_many_tokens"}); n[201] != identity.MaxOwnTokens-40 {
				t.Errorf("20 tokens created at once with room for %d: %v", identity.MaxOwnTokens-40, n)
			}
			_, raw, _ := st.call(ana.Token, "GET", "/api/v1/tokens", nil)
			if active := strings.Count(string(raw), `"status":"active"`); active != identity.MaxOwnTokens {
				t.Errorf("%d active tokens, want %d", active, identity.MaxOwnTokens)
			}

			// A session holding 1 MiB; eight 1 MiB inputs at once against 8 MiB.
			mib := strings.Repeat("a", 1<<20)
			sid := st.noteSession(lead, "Big", mib)
			codes, bodies = st.callsAtOnce(8, func(int) (int, []byte) {
				code, raw, _ := st.call(lead, "POST", "/pse/sessions/"+sid+"/inputs", map[string]string{"kind": "note", "title": "MiB", "content": mib})
				return code, raw
			})
			if n := tally(t, "add an input", codes, bodies, map[int]string{201: `"size":1048576`, 413: "payload_too_large"}); n[201] != 7 {
				t.Errorf("eight 1 MiB inputs at once with room for 7: %v", n)
			}
			code, raw, _ := st.call(lead, "GET", "/pse/sessions/"+sid, nil)
			var v struct{ Inputs []struct{ Size int64 } }
			if err := json.Unmarshal(raw, &v); code != 200 || err != nil {
				t.Fatalf("get the session: %d %s", code, raw)
			}
			var total int64
			for _, in := range v.Inputs {
				total += in.Size
			}
			if total > 8<<20 {
				t.Errorf("the session holds %d bytes in %d inputs, over 8 MiB", total, len(v.Inputs))
			}
		})
	}
}
