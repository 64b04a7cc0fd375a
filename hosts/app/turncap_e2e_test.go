package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// startReplicas starts n devpilot processes (HTTP + worker) on one fresh
// database, sharing one fake model: replicas behind a load balancer.
// extra adds variables to every replica's environment.
func startReplicas(t *testing.T, d sqlstore.Dialect, n int, extra map[string]string) []*stack {
	t.Helper()
	return startReplicasOn(t, stackCase{dialect: d, provider: onOpenAI}, n, extra)
}

// startReplicasOn is startReplicas on c's database and model provider
// (see providerEnv).
func startReplicasOn(t *testing.T, c stackCase, n int, extra map[string]string) []*stack {
	t.Helper()
	skipShort(t)
	d := c.dialect
	model, aws := fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly()), fakeaws.New(t)
	env := map[string]string{
		app.EnvAWSEndpoint:   aws.URL(),
		app.EnvDatabaseURL:   sqlstoretest.URL(t, d),
		app.EnvDataDir:       t.TempDir(),
		app.EnvHTTPAddr:      "127.0.0.1:0",
		app.EnvOpenAIKey:     "sk-test",
		app.EnvOpenAIBaseURL: model.URL(),
		app.EnvAutoTitle:     "0", // the script holds the chat's model calls only
		app.EnvLLMStructured: "strict",
	}
	for k, v := range c.modelEnv(t, model) {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := app.Load(app.ModeRun, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	stacks := make([]*stack, n)
	for i := range stacks {
		st := &stack{t: t, model: model, aws: aws}
		logs := &addrWatch{addr: make(chan string, 1)}
		fxApp := fx.New(
			app.Options(cfg, app.NewLogger(cfg, logs)),
			fx.Invoke(func(r *tool.Registry) error { return r.Register(st.tools()...) }),
			fx.Populate(&st.id, &st.reg),
		)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := fxApp.Start(ctx)
		cancel()
		if err != nil {
			t.Fatalf("start replica %d: %v", i, err)
		}
		st.stop = sync.OnceValue(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return fxApp.Stop(ctx)
		})
		t.Cleanup(func() {
			if err := st.stop(); err != nil {
				t.Errorf("stop replica %d: %v", i, err)
			}
		})
		select {
		case st.base = <-logs.addr:
		case <-time.After(10 * time.Second):
			t.Fatalf("replica %d: no listening line", i)
		}
		stacks[i] = st
	}
	return stacks
}

// TestTurnCapAcrossReplicas holds turns open (the model does not answer)
// and checks that one more chat of the same user is 429 too_many_turns on
// any replica, with nothing stored, while another user chats on.
func TestTurnCapAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas := 1 // SQLite has one writer: one process
			if d == sqlstore.DialectPostgres {
				replicas = 2
			}
			const maxTurns = 2
			stacks := startReplicas(t, d, replicas, map[string]string{app.EnvMaxTurnsPerUser: strconv.Itoa(maxTurns)})
			on := func(i int) *stack { return stacks[i%len(stacks)] }
			alice, bob := stacks[0].token("alice@example.com"), stacks[0].token("bob@example.com")

			// The model holds every call until gate is closed.
			entered, gate := make(chan struct{}, 16), make(chan struct{})
			var gateOnce sync.Once
			release := func() { gateOnce.Do(func() { close(gate) }) }
			t.Cleanup(release)
			stacks[0].model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
				entered <- struct{}{}
				<-gate
				return fakeopenai.Text("done")
			})
			var held sync.WaitGroup
			hold := func(st *stack, token string) {
				held.Go(func() {
					req, _ := http.NewRequest("POST", st.base+"/api/v1/agent/chat", strings.NewReader(`{"message":"take your time"}`))
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Errorf("held chat: %v", err)
						return
					}
					defer resp.Body.Close()
					body, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != 200 || !strings.Contains(string(body), "event: done") {
						t.Errorf("held chat: %d %s", resp.StatusCode, body)
					}
				})
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatal("a held chat never reached the model")
				}
			}
			for i := range maxTurns {
				hold(on(i), alice)
			}

			for i := range stacks {
				code, body := stacks[i].callRaw(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "one more"})
				var p struct {
					Code   string `json:"code"`
					Detail string `json:"detail"`
				}
				if code.status != http.StatusTooManyRequests || json.Unmarshal(body, &p) != nil || p.Code != "too_many_turns" ||
					!strings.Contains(p.Detail, strconv.Itoa(maxTurns)) {
					t.Fatalf("chat past the cap on replica %d: %d %s", i, code.status, body)
				}
				if secs, err := strconv.Atoi(code.retryAfter); err != nil || secs < 1 || secs > 60 {
					t.Errorf("Retry-After %q, want a few seconds", code.retryAfter)
				}
				if !strings.HasPrefix(code.contentType, "application/problem+json") {
					t.Errorf("Content-Type %q, want problem+json", code.contentType)
				}
			}
			code, body, _ := on(1).call(alice, "GET", "/api/v1/agent/sessions", nil)
			var list struct {
				Items []json.RawMessage `json:"items"`
			}
			if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Items) != maxTurns {
				t.Errorf("sessions after refused chats: %d %s; want the %d held ones", code, body, maxTurns)
			}

			// Another user is not held back.
			hold(on(1), bob)

			release()
			held.Wait()
			if code, body, evs := on(1).call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "again"}); code != 200 || !strings.HasSuffix(names(evs), "done") {
				t.Fatalf("chat once the turns ended: %d %s", code, body)
			}
		})
	}
}

// rawAnswer is what callRaw reads of a response's head.
type rawAnswer struct {
	status                  int
	retryAfter, contentType string
}

// callRaw is call with the response's Retry-After and Content-Type.
func (st *stack) callRaw(token, method, path string, body any) (rawAnswer, []byte) {
	st.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, st.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	code, header, raw := st.send(req)
	return rawAnswer{status: code, retryAfter: header.Get("Retry-After"), contentType: header.Get("Content-Type")}, raw
}

// TestMaxTurnsPerUserVariable checks DEVPILOT_MAX_TURNS_PER_USER's default
// and range.
func TestMaxTurnsPerUserVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  int
		ok    bool
	}{{"", 8, true}, {"0", 0, true}, {"1000", 1000, true}, {"1001", 0, false}, {"-1", 0, false}, {"many", 0, false}} {
		cfg, err := app.Load(app.ModeServe, env(map[string]string{app.EnvDatabaseURL: "postgres://db/x", app.EnvSecretKey: validKey, app.EnvMaxTurnsPerUser: tc.value}))
		switch {
		case tc.ok && (err != nil || cfg.Assistant.MaxTurnsPerUser != tc.want):
			t.Errorf("%q: %d, %v; want %d", tc.value, cfg.Assistant.MaxTurnsPerUser, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), app.EnvMaxTurnsPerUser)):
			t.Errorf("%q: %v, want an error naming %s", tc.value, err, app.EnvMaxTurnsPerUser)
		}
	}
}
