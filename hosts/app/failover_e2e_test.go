package app_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/testkit/fakeotlp"
)

// TestModelFailover: the chat's first model is Anthropic's, which answers
// 529 overloaded; the turn is answered by Bedrock, the next of the list.
// The title's first is Bedrock, which throttles; Anthropic answers it.
// Usage and traces name the provider that answered (and the failed
// attempt's span the one that failed). A provider that fails after its
// first delta is not failed over: the turn ends with the error. SQLite
// only: the router is above the database.
func TestModelFailover(t *testing.T) {
	t.Parallel()
	collector := fakeotlp.New(t)
	st := startStackOn(t, stackCase{dialect: sqlstore.DialectSQLite, env: func(script *fakeopenai.Server) map[string]string {
		// Anthropic and Bedrock both over the stack's script: the chat
		// tries anthropic then bedrock, the title bedrock then anthropic.
		env := providerEnv(t, onAnthropic, script)
		maps.Copy(env, providerEnv(t, onBedrock, script))
		env[app.EnvModelChat] = "anthropic:" + anthropicTestModel + ",bedrock:" + bedrockTestModel
		env[app.EnvModelTitle] = "bedrock:" + bedrockTestModel + ",anthropic:" + anthropicTestModel
		env[telemetry.EnvOTelTracesEndpoint] = collector.TracesURL()
		return env
	}}, nil)
	admin := st.admin("admin@example.com")

	// The chat: anthropic (529) → bedrock.
	st.model.Enqueue(fakeopenai.Overloaded(), fakeopenai.Text("Answered by the second provider.").WithUsage(100, 7))
	code, body, evs := st.call(admin, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"})
	if code != 200 || deltas(evs) != "Answered by the second provider." || evs[len(evs)-1].Data["finish_reason"] != "stop" {
		t.Fatalf("chat: %d %s", code, body)
	}
	session := find(evs, "done").Data["session_id"].(string)

	// The title: bedrock (throttled) → anthropic.
	st.model.Enqueue(fakeopenai.RateLimited(time.Second), fakeopenai.Text(`"Greetings"`).WithUsage(50, 3))
	if code, body, _ := st.call(admin, "POST", "/api/v1/agent/generate-title", map[string]any{"session_id": session}); code != 200 ||
		!strings.Contains(string(body), `"title":"Greetings"`) {
		t.Fatalf("generate-title: %d %s", code, body)
	}

	code, r := st.usage(admin, "?group_by=model")
	var keys []string
	for _, g := range r.Groups {
		keys = append(keys, g.Key)
	}
	want := []string{"anthropic:" + anthropicTestModel, "bedrock:" + bedrockTestModel}
	if code != 200 || !slices.Equal(keys, want) {
		t.Fatalf("usage by model %d %v, want %v: the answering providers' only", code, keys, want)
	}

	// A failure after the first delta ends the turn: no second provider.
	before := len(st.model.Requests())
	st.model.Enqueue(fakeopenai.TextChunks("Partial ", "answer").FailAfter(1, fakeopenai.Overloaded()))
	_, _, evs = st.call(admin, "POST", "/api/v1/agent/chat", map[string]any{"message": "again", "session_id": session})
	if names := names(evs); !strings.HasSuffix(names, "error,done") || deltas(evs) != "Partial " {
		t.Fatalf("a failure after a delta: events %s, text %q", names, deltas(evs))
	}
	if n := len(st.model.Requests()) - before; n != 1 {
		t.Fatalf("%d model requests after a failure past the first delta, want 1 (no failover)", n)
	}

	// The chat's trace has the failed Anthropic attempt and Bedrock's
	// answer, each span naming its provider.
	collector.WaitFor(t, 20*time.Second, "the chat's two model spans", func(spans []fakeotlp.Span) bool {
		var failed, answered bool
		for _, sp := range spans {
			if sp.Kind != "CLIENT" || sp.Attributes["gen_ai.operation.name"] != "chat" {
				continue
			}
			switch p := sp.Attributes["gen_ai.provider.name"]; {
			case p == "anthropic" && sp.Error && sp.Attributes["gen_ai.request.model"] == anthropicTestModel:
				failed = true
			case p == "aws.bedrock" && !sp.Error && sp.Attributes["gen_ai.request.model"] == bedrockTestModel:
				answered = true
			}
		}
		return failed && answered
	})
}
