package app_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// mcpTSDir holds the TypeScript client and its pinned SDK (npm ci there).
var mcpTSDir = filepath.Join("testdata", "mcpts")

// needTSClient skips (locally) or fails (in CI) when node or the
// TypeScript SDK is missing.
func needTSClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		if _, err := os.Stat(filepath.Join(mcpTSDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
			missing = "the TypeScript MCP SDK is not installed: run npm ci in hosts/app/testdata/mcpts"
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node
}

// TestMCPServerTypeScriptClient drives /mcp with the official TypeScript
// SDK's client (an independent implementation) on both databases: it lists
// resources and templates, reads a PRP, gets the implement_prp prompt,
// calls a read tool and a write, which waits; the test approves the write
// through POST /api/v1/agent/confirm on another replica (PostgreSQL), and
// the client sees the outcome through get_confirmation.
func TestMCPServerTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := needTSClient(t)
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas := 1
			if d == sqlstore.DialectPostgres {
				replicas = 2
			}
			stacks := startReplicas(t, d, replicas, nil)
			one, other := stacks[0], stacks[len(stacks)-1]
			dev := one.token("dev@example.com")
			id := one.specThroughPRPs(dev)

			cmd := exec.CommandContext(t.Context(), node, "client.mjs", other.base+"/mcp", dev, id)
			cmd.Dir = mcpTSDir
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Wait() }()
			lines := bufio.NewScanner(stdout)
			lines.Buffer(make([]byte, 1<<20), 4<<20)
			next := func(want string, into any) {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("the TypeScript client stopped before %s: %s", want, stderr.String())
				}
				var line struct {
					Step  string
					Value json.RawMessage
				}
				if err := json.Unmarshal(lines.Bytes(), &line); err != nil || line.Step != want {
					t.Fatalf("want step %s, got %.300s (%v)", want, lines.Text(), err)
				}
				if err := json.Unmarshal(line.Value, into); err != nil {
					t.Fatalf("%s: %v", want, err)
				}
			}

			var connected struct {
				Server       struct{ Name string }
				Capabilities map[string]any
			}
			next("connected", &connected)
			if connected.Server.Name != "devpilot" || connected.Capabilities["resources"] == nil || connected.Capabilities["tools"] == nil {
				t.Errorf("connected: %+v", connected)
			}
			var resources []string
			next("resources", &resources)
			if !slices.Contains(resources, "devpilot://specs/"+id+"/prps/PRP-1.1") || !slices.Contains(resources, "devpilot://specs/"+id) {
				t.Errorf("resources: %v", resources)
			}
			var templates []string
			next("templates", &templates)
			if !slices.Contains(templates, "devpilot://specs/{session}/prps/{prp}") {
				t.Errorf("templates: %v", templates)
			}
			var prp struct{ MimeType, Text string }
			next("prp", &prp)
			if prp.MimeType != "text/markdown" || !strings.Contains(prp.Text, "PRP-1.1") {
				t.Errorf("PRP: %s %.300s", prp.MimeType, prp.Text)
			}
			var prompt string
			next("prompt", &prompt)
			if !strings.Contains(prompt, "Implementation tasks") {
				t.Errorf("prompt: %.300s", prompt)
			}
			var tools []struct {
				Name        string
				Annotations struct{ ReadOnlyHint, IdempotentHint bool }
			}
			next("tools", &tools)
			readOnly := map[string]bool{}
			for _, tl := range tools {
				readOnly[tl.Name] = tl.Annotations.ReadOnlyHint
			}
			if !readOnly["list_widgets"] || readOnly["resize_widget"] || !readOnly["get_confirmation"] {
				t.Errorf("tools: %+v", tools)
			}
			var read struct {
				IsError bool
				Text    string
			}
			next("read", &read)
			if read.IsError || !strings.Contains(read.Text, "checkout") {
				t.Errorf("read: %+v", read)
			}
			var pending mcpConfirmationView
			next("write", &pending)
			if pending.Status != "pending" || pending.ConfirmationID == "" || ran(stacks) != 0 {
				t.Fatalf("write: %+v (ran %d)", pending, ran(stacks))
			}
			code, body, _ := one.call(dev, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": pending.SessionID,
				"confirmation_id": pending.ConfirmationID, "approved": true})
			if code != 200 {
				t.Fatalf("confirm: %d %s", code, body)
			}
			if _, err := stdin.Write([]byte("approved\n")); err != nil {
				t.Fatal(err)
			}
			var outcome mcpConfirmationView
			next("outcome", &outcome)
			if outcome.Status != "approved" || outcome.Result == nil || !outcome.Result.OK || ran(stacks) != 1 {
				t.Fatalf("outcome: %+v (ran %d)", outcome, ran(stacks))
			}
		})
	}
}
