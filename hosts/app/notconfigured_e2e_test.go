package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// TestSpecWithoutModelFailsAtOnce: with no model provider configured, a
// stage's generation is a configuration error, permanent: the job fails on
// its first attempt (not after four over 30 s), and the session's error
// names the setting.
func TestSpecWithoutModelFailsAtOnce(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			// AWS_ENDPOINT_URL (the fake AWS) keeps the sandbox off.
			st := startStackWith(t, string(d), map[string]string{app.EnvOpenAIKey: "", app.EnvOpenAIBaseURL: ""})
			member := st.token("dev@example.com")
			id := st.noteSession(member, "No model", "We want one-click checkout.")
			start := time.Now()
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil); code != 202 {
				t.Fatalf("generate: %d %s", code, body)
			}
			v := st.waitReady(member, id)
			took := time.Since(start)
			if v.Status != "failed" || v.Error == nil || v.Error.Code != "no_model_provider" || !strings.Contains(v.Error.Message, app.EnvOpenAIKey) {
				t.Fatalf("session %s, error %+v; want failed with no_model_provider naming %s", v.Status, v.Error, app.EnvOpenAIKey)
			}
			if took > 10*time.Second {
				t.Errorf("the failure took %s: a configuration error was retried", took)
			}
		})
	}
}
