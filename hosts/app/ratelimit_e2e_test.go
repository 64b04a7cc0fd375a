package app_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestRateLimitAcrossReplicas is issue 22's check of the request rate: two
// serve processes on one database count one user's costly requests
// together, so the user gets 429 at the same count whichever replica
// answers, and another user is not affected.
func TestRateLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			model := fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly())
			const limit = 3
			vars := map[string]string{
				app.EnvSecretKey:     validKey,
				app.EnvDatabaseURL:   sqlstoretest.URL(t, d),
				app.EnvDataDir:       t.TempDir(),
				app.EnvHTTPAddr:      "127.0.0.1:0",
				app.EnvOpenAIKey:     "sk-test",
				app.EnvOpenAIBaseURL: model.URL(),
				app.EnvAutoTitle:     "0", // the script holds the chat's model calls only
				app.EnvRateRequests:  strconv.Itoa(limit),
				// A window so long that the test never sees one end.
				app.EnvRateWindow: "1000h",
			}
			db, err := sqlstore.Open(t.Context(), vars[app.EnvDatabaseURL])
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := app.Migrate(t.Context(), db, app.NewLogger(app.Config{}, &strings.Builder{})); err != nil {
				t.Fatal(err)
			}
			var id *identity.Service
			one := &stack{t: t, model: model}
			one.base = startProcess(t, app.ModeServe, vars, fx.Populate(&id))
			one.id = id
			two := &stack{t: t, model: model, id: id, base: startProcess(t, app.ModeServe, vars)}
			alice, bob := one.token("alice@example.com"), one.token("bob@example.com")

			replicas := []*stack{one, two}
			for i := range limit {
				if code, body, _ := replicas[i%2].call(alice, "POST", "/api/v1/voice/session", nil); code != http.StatusOK {
					t.Fatalf("alice's request %d of %d on replica %d: %d %s", i+1, limit, i%2+1, code, body)
				}
			}
			for i, st := range replicas {
				req, _ := http.NewRequest("POST", st.base+"/api/v1/voice/session", nil)
				req.Header.Set("Authorization", "Bearer "+alice)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var p struct{ Code string }
				err = json.NewDecoder(resp.Body).Decode(&p)
				_ = resp.Body.Close()
				secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				if resp.StatusCode != http.StatusTooManyRequests || err != nil || p.Code != "rate_limited" || secs < 1 {
					t.Errorf("alice over the limit on replica %d: %d code %q Retry-After %q (%v), want 429 rate_limited with Retry-After ≥ 1",
						i+1, resp.StatusCode, p.Code, resp.Header.Get("Retry-After"), err)
				}
			}
			// The limit is alice's alone; routes that are not costly are not limited.
			for i, st := range replicas {
				if code, body, _ := st.call(bob, "POST", "/api/v1/voice/session", nil); code != http.StatusOK {
					t.Errorf("bob on replica %d: %d %s", i+1, code, body)
				}
				if code, body, _ := st.call(alice, "GET", "/api/v1/me", nil); code != http.StatusOK {
					t.Errorf("alice's GET /api/v1/me on replica %d: %d %s", i+1, code, body)
				}
			}
		})
	}
}
