package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

// scmConnectionJSON is GET /scm/connection's answer.
type scmConnectionJSON struct {
	Configured   bool     `json:"configured"`
	Setup        string   `json:"setup"`
	Connected    bool     `json:"connected"`
	Status       string   `json:"status"`
	Login        *string  `json:"login"`
	Scopes       []string `json:"scopes"`
	Repositories int      `json:"repositories"`
}

// connectionState reads GET path (/scm/connection or its /api/v1 alias)
// as the token's user.
func (st *scmStack) connectionState(token, path string) scmConnectionJSON {
	st.t.Helper()
	code, body, _ := st.call(token, "GET", path, nil)
	var out scmConnectionJSON
	if err := json.Unmarshal(body, &out); code != 200 || err != nil {
		st.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return out
}

// TestSCMConnectionStates reads the connection's state in each of its
// three states: GitHub not configured on the server, configured but the
// user never connected (where /scm/repos answers an empty list, which the
// console once took for "connected"), and connected with two repositories.
func TestSCMConnectionStates(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			t.Run("not configured", func(t *testing.T) {
				t.Parallel()
				st := startSCMStack(t, string(d), func(env map[string]string) {
					delete(env, app.EnvGitHubClientID)
					delete(env, app.EnvGitHubSecret)
				})
				tok := st.token("erin@example.com")
				for _, path := range []string{"/scm/connection", "/api/v1/scm/connection"} {
					got := st.connectionState(tok, path)
					if got.Configured || got.Connected || got.Login != nil || len(got.Scopes) != 0 || got.Repositories != 0 ||
						!strings.Contains(got.Setup, app.EnvGitHubClientID) || !strings.Contains(got.Setup, app.EnvGitHubSecret) {
						t.Errorf("GET %s without GitHub = %+v", path, got)
					}
				}
				if code, _, _ := st.call("", "GET", "/scm/connection", nil); code != 401 {
					t.Errorf("GET /scm/connection without a token = %d, want 401", code)
				}
			})
			t.Run("not connected, then connected", func(t *testing.T) {
				t.Parallel()
				st := startSCMStack(t, string(d))
				st.gh.AddUser("octo-dana", 201)
				st.gh.AddRepo("octo-dana", "api")
				st.gh.AddRepo("acme", "web", fakegithub.VisibleTo("octo-dana"))
				dana, eve := st.token("dana@example.com"), st.token("eve@example.com")

				got := st.connectionState(dana, "/scm/connection")
				if !got.Configured || got.Setup != "" || got.Connected || got.Login != nil || got.Scopes == nil || len(got.Scopes) != 0 || got.Repositories != 0 {
					t.Fatalf("before connecting: %+v", got)
				}
				if out := st.connect(dana, "octo-dana"); out.Repositories != 2 {
					t.Fatalf("connect: %+v", out)
				}
				got = st.connectionState(dana, "/api/v1/scm/connection")
				if !got.Configured || !got.Connected || got.Status != "active" || got.Login == nil || *got.Login != "octo-dana" ||
					!slices.Contains(got.Scopes, "repo") || got.Repositories != 2 {
					t.Fatalf("connected: %+v (login %v)", got, got.Login)
				}
				// Another user of the organisation has not connected.
				if other := st.connectionState(eve, "/scm/connection"); other.Connected || other.Repositories != 0 {
					t.Fatalf("a colleague's state: %+v", other)
				}
			})
		})
	}
}
