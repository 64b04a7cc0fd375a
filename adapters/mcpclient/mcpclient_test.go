package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/mcpclient"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakemcp"
)

func names(tools []ports.MCPTool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func TestClientAgainstFake(t *testing.T) {
	t.Parallel()
	srv := fakemcp.New(t)
	srv.RequireHeader("Authorization", "Bearer s3cret")
	c := mcpclient.New(mcpclient.Config{AllowPrivate: true, MaxResponse: 1 << 20, MaxText: 1000})
	t.Cleanup(c.Close)
	ep := ports.MCPEndpoint{ServerID: "s1", URL: srv.URL(), Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	ctx := t.Context()

	tools, err := c.ListTools(ctx, ep)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if got := names(tools); !slices.Equal(got, []string{"big", "create_ticket", "hang", "lookup", "vanish"}) {
		t.Fatalf("tools = %v", got)
	}
	for _, tl := range tools {
		switch tl.Name {
		case "lookup":
			if !tl.ReadOnly || tl.Destructive || len(tl.InputSchema) == 0 {
				t.Errorf("lookup = %+v", tl)
			}
		case "create_ticket":
			if tl.ReadOnly || !tl.Destructive {
				t.Errorf("create_ticket = %+v", tl)
			}
		}
	}

	res, err := c.CallTool(ctx, ep, "lookup", json.RawMessage(`{"query":"q1"}`))
	if err != nil || res.Text != "found: q1" || res.IsError || res.Truncated {
		t.Fatalf("lookup: %+v, %v", res, err)
	}

	// 10 MB is not read whole: the call fails past MaxResponse.
	if _, err := c.CallTool(ctx, ep, "big", nil); !errors.Is(err, ports.ErrUpstream) {
		t.Fatalf("big: %v, want upstream", err)
	}

	// A hanging tool ends with the caller's deadline.
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.CallTool(hctx, ep, "hang", nil); !ports.IsKind(err, ports.KindTimeout) {
		t.Fatalf("hang: %v, want timeout", err)
	}

	// tools/list_changed drops the cache (kept for a minute otherwise). A
	// notification sent before the session's event stream is open is
	// lost, so tools are added until one shows.
	if _, err := c.ListTools(ctx, ep); err != nil { // a new session, after the hang's
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		srv.AddTool(fmt.Sprintf("fresh%d", i), "A new tool.", "new")
		tools, err := c.ListTools(ctx, ep)
		if err == nil && slices.ContainsFunc(names(tools), func(n string) bool { return strings.HasPrefix(n, "fresh") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new tool never appeared: %v %v", names(tools), err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The headers were sent.
	for _, h := range srv.Headers() {
		if h.Get("Authorization") != "Bearer s3cret" {
			t.Fatalf("a request without the header: %v", h)
		}
	}
}

func TestClientServerVanishes(t *testing.T) {
	t.Parallel()
	srv := fakemcp.New(t)
	c := mcpclient.New(mcpclient.Config{AllowPrivate: true})
	t.Cleanup(c.Close)
	ep := ports.MCPEndpoint{ServerID: "s2", URL: srv.URL()}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, ep); err != nil {
		t.Fatal(err)
	}
	_, err := c.CallTool(ctx, ep, "vanish", nil)
	if err == nil {
		t.Fatal("vanish answered")
	}
	if ctx.Err() != nil {
		t.Fatalf("the call hung until the deadline: %v", err)
	}
	srv.Stop()
	if _, err := c.Refresh(ctx, ep); !errors.Is(err, ports.ErrUnavailable) {
		t.Fatalf("a stopped server: %v, want unavailable", err)
	}
}

func TestClientRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := fakemcp.New(t)
	c := mcpclient.New(mcpclient.Config{})
	t.Cleanup(c.Close)
	_, err := c.ListTools(t.Context(), ports.MCPEndpoint{ServerID: "s3", URL: srv.URL()})
	if !ports.IsKind(err, ports.KindInvalid) {
		t.Fatalf("a loopback server: %v, want invalid", err)
	}
	if srv.Calls("lookup") != 0 || len(srv.Headers()) != 0 {
		t.Fatal("the server was reached")
	}
}
