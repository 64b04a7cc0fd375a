package demomodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// registry is the assistant's real tool catalogue: the model is offered
// its definitions, and every call it makes is checked by it as the chat
// loop does.
func registry(t *testing.T) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, tools := range [][]tool.Tool{
		cloud.New(cloud.Config{}, cloud.Deps{}).Tools(),
		spec.New(spec.Config{}, spec.Deps{}).Tools(),
		content.New(content.Config{}, content.Deps{}).Tools(),
		scm.New(scm.Config{}, scm.Deps{}).Tools(),
	} {
		if err := reg.Register(tools...); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

const (
	acctProd    = "01900000-0000-7000-8000-0000000000a1"
	acctStaging = "01900000-0000-7000-8000-0000000000a2"
	repoWeb     = "01900000-0000-7000-8000-0000000000b1"
	repoAPI     = "01900000-0000-7000-8000-0000000000b2"
	briefSpring = "01900000-0000-7000-8000-0000000000c1"
	briefNews   = "01900000-0000-7000-8000-0000000000c2"
	specExpense = "01900000-0000-7000-8000-0000000000d1"
	specPortal  = "01900000-0000-7000-8000-0000000000d2"
)

// sandbox answers tool calls the way the sandbox's fakes would, as the
// tools' views shape them.
type sandbox struct {
	noAccounts bool
	oneRepo    bool
	fail       map[string]string // tool → error
	reject     bool              // writes are rejected
	// twoEnvs has the clusters the sandbox of `devpilot run` has:
	// production and staging, with a checkout service in each.
	twoEnvs bool
}

func (s sandbox) run(name string, args map[string]any) ports.ToolOutcome {
	if msg, ok := s.fail[name]; ok {
		return ports.ToolOutcome{Error: msg}
	}
	var v any
	switch name {
	case "list_cloud_accounts":
		items := []any{
			map[string]any{"id": acctProd, "name": "production", "provider": "aws", "region": "eu-west-1", "auth_mode": "assume_role", "read_only": false, "status": "ok"},
			map[string]any{"id": acctStaging, "name": "staging", "provider": "aws", "region": "eu-west-1", "auth_mode": "access_key", "read_only": true, "status": "untested"},
		}
		switch {
		case s.noAccounts:
			items = []any{}
		case s.twoEnvs:
			items = []any{map[string]any{"id": acctProd, "name": "demo-aws", "region": "us-east-1", "read_only": false, "status": "ok"}}
		}
		v = map[string]any{"items": items, "next_cursor": ""}
	case "list_clusters":
		if s.twoEnvs {
			v = map[string]any{"items": []any{
				map[string]any{"name": "production", "status": "ACTIVE", "active_services": 3, "running_tasks": 7},
				map[string]any{"name": "staging", "status": "ACTIVE", "active_services": 1, "running_tasks": 1},
			}}
			break
		}
		v = map[string]any{"items": []any{
			map[string]any{"name": "prod-main", "arn": "arn:aws:ecs:eu-west-1:1:cluster/prod-main", "status": "ACTIVE", "active_services": 2, "running_tasks": 5, "pending_tasks": 0},
			map[string]any{"name": "prod-batch", "arn": "arn:aws:ecs:eu-west-1:1:cluster/prod-batch", "status": "ACTIVE", "active_services": 1, "running_tasks": 1, "pending_tasks": 0},
		}}
	case "list_services":
		svc := func(n string, d, r int) any {
			return map[string]any{"name": n, "cluster": args["cluster"], "status": "ACTIVE", "task_definition": n + ":7", "desired": d, "running": r, "pending": 0, "deployments": []any{}}
		}
		switch {
		case s.twoEnvs && args["cluster"] == "production":
			v = map[string]any{"items": []any{svc("checkout", 2, 2), svc("search", 3, 3), svc("payments", 2, 2)}}
		case s.twoEnvs:
			v = map[string]any{"items": []any{svc("checkout", 1, 1)}}
		case args["cluster"] == "prod-main":
			v = map[string]any{"items": []any{svc("api", 2, 2), svc("web", 3, 3)}}
		default:
			v = map[string]any{"items": []any{svc("worker", 1, 1)}}
		}
	case "scale_service":
		v = map[string]any{"name": args["service"], "cluster": args["cluster"], "status": "ACTIVE", "desired": args["desired_count"], "running": 2, "pending": 0, "deployments": []any{}}
	case "deploy_service":
		v = map[string]any{"deployment_id": "ecs-svc/1234567890", "status": "PRIMARY"}
	case "get_service_logs":
		v = map[string]any{"items": []any{
			map[string]any{"timestamp": "2025-03-15T09:00:00Z", "message": "GET /healthz 200", "stream": "api/1"},
			map[string]any{"timestamp": "2025-03-15T09:00:05Z", "message": "GET /v1/orders 200", "stream": "api/1"},
		}}
	case "get_costs":
		v = map[string]any{"currency": "USD", "total": "123.4567", "start_date": args["start_date"], "end_date": args["end_date"],
			"periods": []any{map[string]any{"start": "2025-02-01T00:00:00Z", "end": "2025-03-01T00:00:00Z", "total": "123.4567", "groups": []any{
				map[string]any{"key": "Amazon Elastic Container Service", "amount": "80.00"},
				map[string]any{"key": "AWS Lambda", "amount": "43.4567"},
			}}}}
	case "list_functions":
		v = map[string]any{"items": []any{map[string]any{"name": "resize-images", "runtime": "nodejs20.x", "state": "Active", "memory_mb": 512}}}
	case "list_apps":
		v = map[string]any{"items": []any{map[string]any{"id": "d1a2b3", "name": "marketing-site", "default_domain": "d1a2b3.amplifyapp.com", "branches": []any{"main"}}}}
	case "list_repos":
		items := []any{
			map[string]any{"id": repoWeb, "full_name": "acme/web", "description": "The web app", "default_branch": "main", "private": true},
			map[string]any{"id": repoAPI, "full_name": "acme/api", "default_branch": "main", "private": true},
		}
		if s.oneRepo {
			items = items[:1]
		}
		v = map[string]any{"items": items, "next_cursor": ""}
	case "list_commits", "search_commits":
		v = map[string]any{"items": []any{
			map[string]any{"sha": "a1b2c3d4e5f6", "message": "Fix the login redirect\n\nLong body", "author": "Alice", "author_login": "alice"},
			map[string]any{"sha": "0f9e8d7c6b5a", "message": "Add receipts upload", "author": "Bob"},
		}, "next_cursor": ""}
	case "list_pulls":
		v = map[string]any{"items": []any{map[string]any{"number": 42, "title": "Dark mode", "state": "open", "author": "carol", "head": "dark", "base": "main"}}, "next_cursor": ""}
	case "get_repo_activity":
		v = map[string]any{"items": []any{map[string]any{"kind": "push", "actor": "alice", "summary": "alice pushed 2 commits to main", "source": "webhook"}}, "next_cursor": ""}
	case "get_brand":
		v = map[string]any{"project_id": args["project_id"], "name": "Acme", "voice": "Warm and plain", "tone": []any{"friendly"}, "banned_words": []any{"synergy"}, "version": 3}
	case "list_briefs":
		v = map[string]any{"items": []any{
			map[string]any{"id": briefSpring, "project_id": "acme", "title": "Spring launch", "format": "article", "channel": "blog", "keywords": []any{}},
			map[string]any{"id": briefNews, "project_id": "acme", "title": "March newsletter", "format": "email", "keywords": []any{}},
		}, "next_cursor": ""}
	case "list_content":
		v = map[string]any{"items": []any{map[string]any{"id": "x", "title": "Spring is here", "status": "draft", "version": 2, "words": 420}}, "next_cursor": ""}
	case "create_brief":
		v = map[string]any{"id": briefSpring, "project_id": args["project_id"], "title": args["title"], "format": "article", "keywords": []any{}}
	case "generate_content":
		v = map[string]any{"brief_id": args["brief_id"], "items": []any{map[string]any{"id": "i1", "variant": 1, "status": "generating"}}}
	case "list_spec_sessions":
		v = map[string]any{"items": []any{
			map[string]any{"id": specExpense, "name": "Expense approvals", "status": "ready", "current_stage": "scope", "next_stage": "prd"},
			map[string]any{"id": specPortal, "name": "Customer portal", "status": "draft"},
		}, "next_cursor": ""}
	case "get_spec_session":
		v = map[string]any{"id": args["session_id"], "name": "Expense approvals", "status": "ready", "current_stage": "scope", "next_stage": "prd",
			"inputs":    []any{map[string]any{"id": "in1", "kind": "document", "title": "expenses.md"}},
			"artifacts": []any{map[string]any{"stage": "scope", "version": 1, "stale": false, "checks": []any{}, "content": "# Scope"}}}
	case "generate_spec_stage":
		v = map[string]any{"session_id": args["session_id"], "stage": "prd", "status": "generating"}
	default:
		return ports.ToolOutcome{Error: "no such tool in the test sandbox"}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return ports.ToolOutcome{OK: true, Result: b}
}

// turn is what one chat turn did.
type turn struct {
	calls []ports.ToolCall
	text  string
}

func (tr turn) names() []string {
	out := make([]string, len(tr.calls))
	for i, c := range tr.calls {
		out[i] = c.Name
	}
	return out
}

func (tr turn) args(name string) map[string]any {
	for _, c := range tr.calls {
		if c.Name == name {
			var m map[string]any
			_ = json.Unmarshal([]byte(c.Arguments), &m)
			return m
		}
	}
	return nil
}

// chat runs turns of the assistant's loop against the demo model, through
// the real adapter: every call is checked by the real registry, read tools
// and approved writes are answered by the sandbox, rejected writes as the
// assistant answers them.
type chat struct {
	t      *testing.T
	llm    ports.LLM
	reg    *tool.Registry
	defs   []ports.ToolDefinition
	box    sandbox
	system string
	page   *tool.PageContext // where the user is, as the console says
	msgs   []ports.Message
	ids    map[string]bool
}

func newChat(t *testing.T, box sandbox) *chat {
	reg := registry(t)
	return &chat{t: t, llm: llm(t), reg: reg, box: box, system: assistant.DefaultSystemPrompt + "\n\n" + assistant.GroundRules + "\n\n" + assistant.ContextRule, ids: map[string]bool{}}
}

// recentTools are the tools called since the assistant.RecentTurns-th last
// user message, most recent first, as the assistant routes by them.
func (c *chat) recentTools() []string {
	var names []string
	users := 0
	for i := len(c.msgs) - 1; i >= 0 && users < assistant.RecentTurns; i-- {
		m := c.msgs[i]
		if m.Role == ports.MessageUser {
			users++
		}
		for j := len(m.ToolCalls) - 1; j >= 0; j-- {
			names = append(names, m.ToolCalls[j].Name)
		}
	}
	return names
}

func (c *chat) say(message string) turn {
	c.t.Helper()
	if len(c.msgs) == 0 {
		c.msgs = append(c.msgs, ports.Message{Role: ports.MessageSystem, Content: c.system})
	}
	// As the assistant sends it: the request context before the last user
	// message only, and the tools routed for the page, the message and the
	// tools called in the last assistant.RecentTurns user turns.
	for i, m := range c.msgs {
		if m.Role == ports.MessageUser {
			_, c.msgs[i].Content, _ = strings.Cut(m.Content, "</request_context>\n\n")
		}
	}
	project := "none"
	if c.page != nil && c.page.SelectedProjectID != "" {
		project = c.page.SelectedProjectID
	}
	c.msgs = append(c.msgs, ports.Message{Role: ports.MessageUser, Content: "<request_context>\ncurrent_page: none\nselected_project_id: " +
		project + "\ncurrent_time: 2026-01-02T03:04:05Z\n</request_context>\n\n" + message})
	c.defs = c.reg.RouteFollowing(c.page, message, c.recentTools(), 0)
	if n := len(c.defs); n > tool.DefaultMaxTools {
		c.t.Fatalf("%d tools offered", n)
	}
	var tr turn
	for round := 0; ; round++ {
		if round == 8 {
			c.t.Fatalf("%q: more than 8 tool rounds: %v", message, tr.names())
		}
		res, err := c.llm.Chat(context.Background(), ports.ChatRequest{Messages: c.msgs, Tools: c.defs}, nil)
		if err != nil {
			c.t.Fatalf("%q: %v", message, err)
		}
		tr.text += res.Content
		c.msgs = append(c.msgs, ports.Message{Role: ports.MessageAssistant, Content: res.Content, ToolCalls: res.ToolCalls})
		if len(res.ToolCalls) == 0 {
			if res.Content == "" {
				c.t.Errorf("%q: an empty answer", message)
			}
			return tr
		}
		for _, call := range res.ToolCalls {
			if c.ids[call.ID] {
				c.t.Errorf("%q: tool call id %s used twice in the conversation", message, call.ID)
			}
			c.ids[call.ID] = true
			tr.calls = append(tr.calls, call)
			known := tool.Known{}
			if c.page != nil {
				known.ProjectID = c.page.SelectedProjectID
			}
			args, tl, problem := c.reg.CheckWith(call, known)
			if problem != "" {
				c.t.Fatalf("%q: call %s(%s) is refused: %s", message, call.Name, call.Arguments, problem)
			}
			var a map[string]any
			_ = json.Unmarshal(args, &a)
			out := c.box.run(call.Name, a)
			if tl.Effect == tool.EffectWrite && c.box.reject {
				out = ports.ToolOutcome{Error: "not run: the user rejected it"}
			}
			c.msgs = append(c.msgs, ports.Message{Role: ports.MessageTool, ToolCallID: call.ID, Name: call.Name, Content: tool.Content(out)})
		}
	}
}

func TestAssistantRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		box     sandbox
		project string // the selected project
		message string
		calls   []string
		args    map[string]map[string]any // per tool, arguments that must be as given
		text    []string                  // the final text contains each
	}{
		{
			name: "what runs in production", message: "What runs in production?",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services"},
			args:  map[string]map[string]any{"list_clusters": {"account_id": acctProd}, "list_services": {"account_id": acctProd, "cluster": "prod-main"}},
			text:  []string{"In production (eu-west-1) there are 2 ECS clusters", "**prod-main**", "**api**: 2 of 2 tasks running", "**worker**: 1 of 1 task running", "scale <service> to <n>"},
		},
		{
			name: "clusters only", message: "list the clusters of staging",
			calls: []string{"list_cloud_accounts", "list_clusters"},
			args:  map[string]map[string]any{"list_clusters": {"account_id": acctStaging}},
			text:  []string{"In staging", "**prod-batch** (ACTIVE): 1 service, 1 running task"},
		},
		{
			name: "scale", message: "Please scale the api service to 3",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "scale_service"},
			args:  map[string]map[string]any{"scale_service": {"account_id": acctProd, "cluster": "prod-main", "service": "api", "desired_count": 3.0}},
			text:  []string{"I will scale api in cluster prod-main from 2 to 3 tasks once you approve.", "Done: **api** in cluster prod-main is set to 3 tasks"},
		},
		{
			name: "scale rejected", box: sandbox{reject: true}, message: "scale worker to 4",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "scale_service"},
			text:  []string{"OK, I did not go ahead with scaling worker to 4 tasks, as you rejected it."},
		},
		{
			name: "scale to zero", message: "scale worker down to 0",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "scale_service"},
			args:  map[string]map[string]any{"scale_service": {"service": "worker", "cluster": "prod-batch", "desired_count": 0.0, "confirm_scale_to_zero": true}},
			text:  []string{"set to 0 tasks"},
		},
		{
			name: "scale without a count", message: "can you scale api?",
			text: []string{"How many tasks should api run?"},
		},
		{
			name: "scale an unknown service", message: "scale billing to 2",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services"},
			text:  []string{`I could not find a service named "billing" in production: its services are api, web and worker.`},
		},
		{
			name: "deploy", message: "deploy web",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "deploy_service"},
			args:  map[string]map[string]any{"deploy_service": {"account_id": acctProd, "cluster": "prod-main", "service": "web"}},
			text:  []string{"Done: a new deployment of **web** has started (deployment ecs-svc/1234567890, status PRIMARY)."},
		},
		{
			name: "deploy without a name", message: "deploy it please",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services"},
			text:  []string{"Which service should be deployed? In production its services are api, web and worker."},
		},
		{
			name: "logs", message: "show me the logs of api",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "get_service_logs"},
			args:  map[string]map[string]any{"get_service_logs": {"service": "api", "cluster": "prod-main", "limit": 20.0}},
			text:  []string{"The latest log events of **api**", "GET /v1/orders 200"},
		},
		{
			name: "costs last month", message: "How much did we spend last month?",
			calls: []string{"list_cloud_accounts", "get_costs"},
			args: map[string]map[string]any{"get_costs": {"account_id": acctProd, "start_date": "2025-02-01", "end_date": "2025-02-28",
				"granularity": "MONTHLY", "group_by": "SERVICE"}},
			text: []string{"Costs from 2025-02-01 to 2025-02-28: **123.46 USD**.", "- Amazon Elastic Container Service: 80.00 USD"},
		},
		{
			name: "costs default range", message: "what are my aws costs",
			calls: []string{"list_cloud_accounts", "get_costs"},
			args:  map[string]map[string]any{"get_costs": {"start_date": "2025-02-14", "end_date": "2025-03-15"}},
		},
		{
			name: "no cloud account", box: sandbox{noAccounts: true}, message: "what runs in production",
			calls: []string{"list_cloud_accounts"},
			text:  []string{"No cloud account is connected yet."},
		},
		{
			name: "a tool fails", box: sandbox{fail: map[string]string{"list_clusters": "AWS refused the request: AccessDenied"}}, message: "what runs in production",
			calls: []string{"list_cloud_accounts", "list_clusters"},
			text:  []string{"The list_clusters call failed: AWS refused the request: AccessDenied."},
		},
		{
			name: "functions", message: "which lambda functions do we have?",
			calls: []string{"list_cloud_accounts", "list_functions"},
			text:  []string{"There is 1 Lambda function:", "**resize-images** (nodejs20.x, Active)"},
		},
		{
			name: "apps", message: "list the amplify apps",
			calls: []string{"list_cloud_accounts", "list_apps"},
			text:  []string{"**marketing-site** (d1a2b3.amplifyapp.com; branches main)"},
		},
		{
			name: "accounts", message: "which cloud accounts are connected?",
			calls: []string{"list_cloud_accounts"},
			text:  []string{"You have 2 cloud accounts:", "**staging** (eu-west-1, read-only, connection untested)"},
		},
		{
			name: "repos", message: "list my repos",
			calls: []string{"list_repos"},
			text:  []string{"You have 2 repositories connected:", "**acme/web** — The web app"},
		},
		{
			name: "commits of a named repo", message: "show me the latest commits of web",
			calls: []string{"list_repos", "list_commits"},
			args:  map[string]map[string]any{"list_commits": {"repo_id": repoWeb}},
			text:  []string{"The latest 2 commits:", "`a1b2c3d` Fix the login redirect (alice)"},
		},
		{
			name: "pulls of the only repo", box: sandbox{oneRepo: true}, message: "any open PRs?",
			calls: []string{"list_repos", "list_pulls"},
			text:  []string{"#42 Dark mode (open, by carol)"},
		},
		{
			name: "pulls with two repos", message: "show the pull requests",
			calls: []string{"list_repos"},
			text:  []string{"Which repository should I show the pull requests of? You have acme/web and acme/api."},
		},
		{
			name: "activity", message: "what happened in acme/api?",
			calls: []string{"list_repos", "get_repo_activity"},
			args:  map[string]map[string]any{"get_repo_activity": {"repo_id": repoAPI}},
			text:  []string{"alice pushed 2 commits to main"},
		},
		{
			name: "search commits", message: `search commits for "login fix"`,
			calls: []string{"search_commits"},
			args:  map[string]map[string]any{"search_commits": {"q": "login fix"}},
			text:  []string{`2 commits match "login fix"`},
		},
		{
			name: "brand", message: "show the brand of project acme",
			calls: []string{"get_brand"},
			args:  map[string]map[string]any{"get_brand": {"project_id": "acme"}},
			text:  []string{"Brand settings of project acme (version 3)", "Banned words: synergy"},
		},
		{
			name: "brand without a project", message: "what are our banned words?",
			text: []string{"Which project's brand settings should I show?"},
		},
		{
			name: "briefs of the selected project", project: "acme", message: "list the briefs",
			calls: []string{"list_briefs"},
			args:  map[string]map[string]any{"list_briefs": {"project_id": "acme"}},
			text:  []string{"There are 2 briefs:", "**Spring launch** (article, blog, project acme)"},
		},
		{
			name: "content", message: "show our content",
			calls: []string{"list_content"},
			text:  []string{"**Spring is here** — draft, version 2, 420 words"},
		},
		{
			name: "create a brief", message: "Create a brief about our spring launch for project acme",
			calls: []string{"create_brief"},
			args:  map[string]map[string]any{"create_brief": {"project_id": "acme", "title": "Our spring launch"}},
			text:  []string{"Done: the brief **Our spring launch** is created in project acme."},
		},
		{
			name: "generate content", message: "generate content for the March newsletter",
			calls: []string{"list_briefs", "generate_content"},
			args:  map[string]map[string]any{"generate_content": {"brief_id": briefNews}},
			text:  []string{"Done: one draft is being written in the background."},
		},
		{
			name: "generate content without a brief named", message: "write a post",
			calls: []string{"list_briefs"},
			text:  []string{"Which brief should I write from? There are “Spring launch” and “March newsletter”."},
		},
		{
			name: "specs", message: "list my specs",
			calls: []string{"list_spec_sessions"},
			text:  []string{"You have 2 specification sessions:", "**Expense approvals** — ready, last stage scope, next prd"},
		},
		{
			name: "one spec", message: "show the Expense approvals spec",
			calls: []string{"list_spec_sessions", "get_spec_session"},
			args:  map[string]map[string]any{"get_spec_session": {"session_id": specExpense}},
			text:  []string{"**Expense approvals** is ready, with 1 input.", "The next stage is prd"},
		},
		{
			name: "generate the next stage", message: "generate the next stage of the customer portal spec",
			calls: []string{"list_spec_sessions", "generate_spec_stage"},
			args:  map[string]map[string]any{"generate_spec_stage": {"session_id": specPortal}},
			text:  []string{"Done: the prd stage is being generated in the background."},
		},
		{
			name: "regenerate a named stage", message: "regenerate the PRD of expense approvals",
			calls: []string{"list_spec_sessions", "generate_spec_stage"},
			args:  map[string]map[string]any{"generate_spec_stage": {"session_id": specExpense, "stage": "prd"}},
		},
		{
			name: "a cluster named production", box: sandbox{twoEnvs: true}, message: "What runs in production?",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services"},
			args:  map[string]map[string]any{"list_services": {"cluster": "production"}},
			text:  []string{"- **production** (ACTIVE): 3 services, 7 running tasks\n  - **checkout**: 2 of 2 tasks running", "- **staging** (ACTIVE): 1 service, 1 running task\n\n"},
		},
		{
			name: "the same service in two clusters", box: sandbox{twoEnvs: true}, message: "scale checkout up to 4 tasks",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "scale_service"},
			args:  map[string]map[string]any{"scale_service": {"cluster": "production", "service": "checkout", "desired_count": 4.0}},
		},
		{
			name: "the same service in a named cluster", box: sandbox{twoEnvs: true}, message: "scale checkout in staging to 2",
			calls: []string{"list_cloud_accounts", "list_clusters", "list_services", "list_services", "scale_service"},
			args:  map[string]map[string]any{"scale_service": {"cluster": "staging", "service": "checkout", "desired_count": 2.0}},
			text:  []string{"I will scale checkout in cluster staging from 1 to 2 tasks once you approve."},
		},
		{
			name: "help", message: "hello!",
			text: []string{"I am devpilot's demo model", "what runs in production?", "list my repos", "list briefs", "list my specs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newChat(t, tt.box)
			if tt.project != "" {
				c.page = &tool.PageContext{SelectedProjectID: tt.project}
			}
			tr := c.say(tt.message)
			if got := tr.names(); !slices.Equal(got, tt.calls) {
				t.Errorf("calls %v, want %v", got, tt.calls)
			}
			for tl, want := range tt.args {
				got := tr.args(tl)
				for k, v := range want {
					if fmt.Sprint(got[k]) != fmt.Sprint(v) {
						t.Errorf("%s %s = %v, want %v (all: %v)", tl, k, got[k], v, got)
					}
				}
			}
			for _, want := range tt.text {
				if !strings.Contains(tr.text, want) {
					t.Errorf("text lacks %q:\n%s", want, tr.text)
				}
			}
		})
	}
}

// TestAssistantRemembers: a later turn uses what earlier turns' tool
// results said, without looking it up again.
func TestAssistantRemembers(t *testing.T) {
	t.Parallel()
	t.Run("a later cluster", func(t *testing.T) {
		c := newChat(t, sandbox{twoEnvs: true})
		c.say("what runs in production?") // lists production's services only
		tr := c.say("scale checkout in staging to 3")
		if got := tr.names(); !slices.Equal(got, []string{"list_services", "list_services", "scale_service"}) ||
			tr.args("scale_service")["cluster"] != "staging" {
			t.Errorf("calls %v, scale %v", got, tr.args("scale_service"))
		}
	})
	c := newChat(t, sandbox{})
	c.say("what runs in production?")
	tr := c.say("now scale web to 5")
	if got := tr.names(); !slices.Equal(got, []string{"scale_service"}) {
		t.Errorf("calls %v, want scale_service alone", got)
	}
	if a := tr.args("scale_service"); a["cluster"] != "prod-main" || a["desired_count"] != 5.0 || a["account_id"] != acctProd {
		t.Errorf("scale arguments %v", a)
	}
	tr = c.say("deploy it")
	if got := tr.names(); len(got) != 0 || !strings.Contains(tr.text, "Which service should be deployed?") {
		t.Errorf("deploy without a name: calls %v, text %q", got, tr.text)
	}
	tr = c.say("and the commits of api")
	if got := tr.names(); !slices.Equal(got, []string{"list_repos", "list_commits"}) {
		t.Errorf("calls %v", got)
	}
	tr = c.say("and its pull requests, in acme/api")
	if got := tr.names(); !slices.Equal(got, []string{"list_pulls"}) || tr.args("list_pulls")["repo_id"] != repoAPI {
		t.Errorf("calls %v %v", got, tr.calls)
	}
}
