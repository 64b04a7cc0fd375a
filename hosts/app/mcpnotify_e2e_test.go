package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/app"
)

// mcpListener connects the Go SDK's client to st's /mcp as token on
// protocol 2026-07-28 with a resource list handler, which makes the client
// open a subscriptions/listen stream; each list_changed it gets goes to
// the channel returned.
func (st *stack) mcpListener(token string) (*mcp.ClientSession, <-chan struct{}) {
	st.t.Helper()
	changed := make(chan struct{}, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-test-listener", Version: "1"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(st.t.Context(), &mcp.StreamableClientTransport{Endpoint: st.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		st.t.Fatalf("connect MCP listener: %v", err)
	}
	st.t.Cleanup(func() { _ = cs.Close() })
	return cs, changed
}

// mcpSubscriber connects a Go SDK client of protocol 2026-07-28 to st's
// /mcp as token and subscribes it to uri (a subscriptions/listen stream of
// its own); each notifications/resources/updated of uri goes to the
// channel returned.
func (st *stack) mcpSubscriber(token, uri string) <-chan struct{} {
	st.t.Helper()
	updated := make(chan struct{}, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-test-subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params.URI != uri {
				st.t.Errorf("resources/updated of %s on the stream of %s", req.Params.URI, uri)
			}
			select {
			case updated <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(st.t.Context(), &mcp.StreamableClientTransport{Endpoint: st.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		st.t.Fatalf("connect MCP subscriber: %v", err)
	}
	st.t.Cleanup(func() { _ = cs.Close() })
	if err := cs.Subscribe(st.t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		st.t.Fatalf("subscribe to %s: %v", uri, err)
	}
	return updated
}

// TestMCPListChangedAcrossReplicas opens a subscriptions/listen stream on
// one replica and regenerates a stage through the HTTP API on another (on
// PostgreSQL; SQLite runs one replica): the listener gets
// notifications/resources/list_changed, a listener of another organisation
// does not, a listener that closed leaves the replica serving on, and a
// replica stops with listen streams open.
func TestMCPListChangedAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas := 1
			if d == sqlstore.DialectPostgres {
				replicas = 2
			}
			stacks := startReplicas(t, d, replicas, map[string]string{app.EnvMCPWatchInterval: "100ms"})
			a, b := stacks[0], stacks[len(stacks)-1]
			dev := a.token("dev@example.com")
			tok, err := a.id.IssueToken(context.Background(), identity.IssueTokenInput{Email: "eve@example.org", OrgName: "globex"})
			if err != nil {
				t.Fatal(err)
			}
			outsider := tok.Token

			id := b.noteSession(dev, "Checkout revamp", "One-click checkout for returning customers.")
			b.model.Enqueue(stageOutput(t, "scope"))
			if code, body, _ := b.call(dev, "POST", "/pse/sessions/"+id+"/generate", map[string]string{}); code != 202 {
				t.Fatalf("generate scope: %d %s", code, body)
			}
			b.waitReady(dev, id)

			listener, changed := a.mcpListener(dev)
			// A client subscribed to the scope document, and one to the PRD
			// (not generated; it does not change).
			scopeUpdated := a.mcpSubscriber(dev, "devpilot://specs/"+id+"/scope")
			prdUpdated := a.mcpSubscriber(dev, "devpilot://specs/"+id+"/prd")
			_, otherChanged := a.mcpListener(outsider)
			// The listen stream is open once a call on the session answers
			// (the client opens it in Connect); the feed's first poll takes
			// the sessions as they stand.
			if _, err := listener.ListResources(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			drain(changed)

			b.model.Enqueue(stageOutput(t, "scope"))
			if code, body, _ := b.call(dev, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"stage": "scope"}); code != 202 {
				t.Fatalf("regenerate scope: %d %s", code, body)
			}
			b.waitReady(dev, id)
			select {
			case <-changed:
			case <-time.After(15 * time.Second):
				t.Fatal("no notifications/resources/list_changed on the listen stream after a regeneration on another replica")
			}
			select {
			case <-scopeUpdated:
			case <-time.After(15 * time.Second):
				t.Fatal("no notifications/resources/updated for the subscribed scope document")
			}
			// The list the notification announces holds the regenerated stage.
			list, err := listener.ListResources(t.Context(), nil)
			if err != nil || !hasResource(list, "devpilot://specs/"+id+"/scope") {
				t.Fatalf("resources after the change: %v %+v", err, list)
			}
			// Several poll intervals later the other organisation's listener
			// has heard nothing.
			time.Sleep(time.Second)
			select {
			case <-otherChanged:
				t.Error("a listener of another organisation was told of the change")
			case <-prdUpdated:
				t.Error("resources/updated for a document that did not change")
			default:
			}

			// A closed listener ends its stream; the replica goes on
			// announcing to a new one.
			if err := listener.Close(); err != nil {
				t.Errorf("close listener: %v", err)
			}
			again, changedAgain := a.mcpListener(dev)
			if _, err := again.ListResources(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			drain(changedAgain)
			if code, body, _ := b.call(dev, "PATCH", "/pse/sessions/"+id, map[string]string{"name": "Checkout, renamed"}); code != 200 {
				t.Fatalf("rename: %d %s", code, body)
			}
			select {
			case <-changedAgain:
			case <-time.After(15 * time.Second):
				t.Fatal("no list_changed after a rename")
			}
			// A replica stops with listen streams open: they end with it.
			if err := a.stop(); err != nil {
				t.Errorf("stop a replica with listen streams open: %v", err)
			}
		})
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func hasResource(list *mcp.ListResourcesResult, uri string) bool {
	if list == nil {
		return false
	}
	for _, r := range list.Resources {
		if r.URI == uri {
			return true
		}
	}
	return false
}

// TestMCPToolCallDeadline registers a tool that runs until its context
// ends: called over MCP, it is cancelled at the request's limit and the
// client gets an error result, on both databases.
func TestMCPToolCallDeadline(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startReplicas(t, d, 1, map[string]string{app.EnvMCPRequestTimeout: "1s"})[0]
			ended := make(chan error, 1)
			if err := st.reg.Register(tool.Tool{Name: "wait_for_widget", Description: "Waits for a widget.", Effect: tool.EffectRead,
				Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
				Run: func(ctx context.Context, _ json.RawMessage) (any, error) {
					<-ctx.Done()
					ended <- ctx.Err()
					return nil, ctx.Err()
				}}); err != nil {
				t.Fatal(err)
			}
			cs := st.mcpClient(st.token("dev@example.com"), nil)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_widget", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("a hanging tool's call: %v", err)
			}
			if !res.IsError || !strings.Contains(toolText(t, res), "did not finish within") {
				t.Fatalf("a hanging tool's result: %+v %s", res, toolText(t, res))
			}
			select {
			case err := <-ended:
				if err == nil {
					t.Error("the tool ended without its context")
				}
			default:
				t.Error("the tool was not cancelled")
			}
			// The client goes on.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_widgets", Arguments: map[string]any{}}); err != nil || res.IsError {
				t.Fatalf("list_widgets after: %v %+v", err, res)
			}
		})
	}
}
