package llmroute_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/ports"
)

// scripted is a provider answering each call with the next of its
// answers, recording the requests.
type scripted struct {
	name string
	mu   sync.Mutex
	reqs []ports.ChatRequest
	// fail, when set, is returned after deltas are sent.
	fail   error
	deltas []string
}

func (s *scripted) Chat(_ context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	for _, d := range s.deltas {
		if onDelta != nil {
			if err := onDelta(d); err != nil {
				return ports.ChatResult{}, err
			}
		}
	}
	if s.fail != nil {
		return ports.ChatResult{}, s.fail
	}
	return ports.ChatResult{Content: strings.Join(s.deltas, "") + "from " + s.name, FinishReason: ports.FinishStop}, nil
}

func (s *scripted) calls() []ports.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

func ctxFor(f ports.Feature) context.Context {
	return ports.WithAttribution(context.Background(), ports.Attribution{OrgID: "o", Feature: f})
}

func TestRouterPicksTheFeaturesModel(t *testing.T) {
	t.Parallel()
	oa, an := &scripted{name: "openai"}, &scripted{name: "anthropic"}
	r, err := llmroute.New(llmroute.Config{
		Providers:    map[string]ports.LLM{"openai": oa, "anthropic": an},
		Routes:       map[ports.Feature][]llmroute.Target{ports.FeatureTitle: {{Provider: "anthropic", Model: "claude-haiku-4-5"}}},
		Default:      []llmroute.Target{{Provider: "openai", Model: "gpt-4o-mini"}},
		Capabilities: llmroute.Capabilities{"claude-haiku-4-5": {MaxOutput: 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Chat(ctxFor(ports.FeatureTitle), ports.ChatRequest{Model: "gpt-4o-mini", MaxTokens: 500}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "anthropic" || res.Model != "claude-haiku-4-5" {
		t.Errorf("answered by %s %s, want anthropic claude-haiku-4-5", res.Provider, res.Model)
	}
	if got := an.calls(); len(got) != 1 || got[0].Model != "claude-haiku-4-5" || got[0].MaxTokens != 100 {
		t.Errorf("anthropic got %+v, want one call of claude-haiku-4-5 bounded to 100 tokens", got)
	}
	// A feature without a route, and a call without an attribution, take
	// the default.
	for _, ctx := range []context.Context{ctxFor(ports.FeatureChat), context.Background()} {
		res, err = r.Chat(ctx, ports.ChatRequest{MaxTokens: 50}, nil)
		if err != nil || res.Provider != "openai" || res.Model != "gpt-4o-mini" {
			t.Errorf("default: %+v, %v", res, err)
		}
	}
	if got := oa.calls(); len(got) != 2 || got[0].Model != "gpt-4o-mini" || got[0].MaxTokens != 50 {
		t.Errorf("openai got %+v", got)
	}
}

func TestRouterFailsOver(t *testing.T) {
	t.Parallel()
	overloaded := &ports.Error{Kind: ports.KindUnavailable, Message: "overloaded"}
	cases := []struct {
		name      string
		first     *scripted
		second    bool // the second provider is configured
		wantFrom  string
		wantErr   error
		wantCalls int // calls of the second provider
	}{
		{name: "unavailable", first: &scripted{fail: overloaded}, second: true, wantFrom: "second", wantCalls: 1},
		{name: "timeout", first: &scripted{fail: ports.Errorf(ports.KindTimeout, "slow")}, second: true, wantFrom: "second", wantCalls: 1},
		{name: "rate limited", first: &scripted{fail: ports.Errorf(ports.KindRateLimited, "429")}, second: true, wantFrom: "second", wantCalls: 1},
		{name: "not configured", first: nil, second: true, wantFrom: "second", wantCalls: 1},
		{name: "budget", first: &scripted{fail: &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded}}, second: true, wantErr: ports.ErrRateLimited},
		{name: "invalid", first: &scripted{fail: ports.ErrContextLength}, second: true, wantErr: ports.ErrContextLength},
		{name: "after a delta", first: &scripted{deltas: []string{"Hel"}, fail: overloaded}, second: true, wantErr: ports.ErrUnavailable},
		{name: "last fails", first: &scripted{fail: overloaded}, second: false, wantErr: ports.ErrNotConfigured},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			second := &scripted{name: "second"}
			providers := map[string]ports.LLM{}
			if tc.first != nil {
				tc.first.name = "first"
				providers["anthropic"] = tc.first
			}
			if tc.second {
				providers["bedrock"] = second
			}
			r, err := llmroute.New(llmroute.Config{Providers: providers, Default: []llmroute.Target{
				{Provider: "anthropic", Model: "claude-sonnet-4-5"}, {Provider: "bedrock", Model: "us.anthropic.claude-sonnet-4-5-v1:0"}}})
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			res, err := r.Chat(ctxFor(ports.FeatureChat), ports.ChatRequest{}, func(d string) error { got.WriteString(d); return nil })
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			} else if err != nil || !strings.HasSuffix(res.Content, "from "+tc.wantFrom) || res.Provider != "bedrock" || res.Model != "us.anthropic.claude-sonnet-4-5-v1:0" {
				t.Fatalf("got %+v, %v; want an answer from %s", res, err, tc.wantFrom)
			}
			if n := len(second.calls()); n != tc.wantCalls {
				t.Errorf("second provider called %d times, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestRouterStopsWhenTheCallerGivesUp(t *testing.T) {
	t.Parallel()
	second := &scripted{name: "second"}
	ctx, cancel := context.WithCancel(ctxFor(ports.FeatureChat))
	first := llmFunc(func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
		cancel()
		return ports.ChatResult{}, ports.Errorf(ports.KindTimeout, "cancelled")
	})
	r, _ := llmroute.New(llmroute.Config{Providers: map[string]ports.LLM{"openai": first, "anthropic": second},
		Default: []llmroute.Target{{Provider: "openai", Model: "a"}, {Provider: "anthropic", Model: "b"}}})
	if _, err := r.Chat(ctx, ports.ChatRequest{}, nil); err == nil || len(second.calls()) != 0 {
		t.Errorf("err %v, second called %d times; want the first error and no second call", err, len(second.calls()))
	}
}

type llmFunc func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error)

func (f llmFunc) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	return f(ctx, req, onDelta)
}

func TestParseTargets(t *testing.T) {
	t.Parallel()
	got, err := llmroute.ParseTargets(" anthropic:claude-sonnet-4-5 , bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0,openai:gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	want := []llmroute.Target{{"anthropic", "claude-sonnet-4-5"}, {"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, {"openai", "gpt-4o"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %v, want %v", i, got[i], want[i])
		}
	}
	for in, msg := range map[string]string{
		"":                   "is empty",
		"openai":             "is not provider:model",
		"openai:":            "is not provider:model",
		"gemini:pro":         `unknown provider "gemini"`,
		"openai:a,,openai:b": "empty entry",
		"openai:a,openai:a":  "twice",
		"openai:gpt 4":       "space or control",
		"openai:a\x00":       "space or control",
	} {
		if _, err := llmroute.ParseTargets(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseTargets(%q) = %v, want an error with %q", in, err, msg)
		}
	}
}

func TestParseCapabilities(t *testing.T) {
	t.Parallel()
	caps, err := llmroute.ParseCapabilities("claude-sonnet-4-5=context:200000,max_output:16000,structured:tool; gpt-4o-mini=structured:strict",
		llmroute.DefaultCapabilities())
	if err != nil {
		t.Fatal(err)
	}
	if c := caps.For("claude-sonnet-4-5-20250929"); c != (llmroute.Capability{ContextWindow: 200000, MaxOutput: 16000, Structured: "tool"}) {
		t.Errorf("claude-sonnet-4-5-20250929: %+v", c)
	}
	if c := caps.For("gpt-4o-mini"); c.Structured != "strict" || c.ContextWindow != 128000 {
		t.Errorf("gpt-4o-mini: %+v (the default's context window, the setting's mode)", c)
	}
	if c := caps.For("us.anthropic.claude-opus-4-1-20250805-v1:0"); c.ContextWindow != 200000 || c.Structured != "tool" {
		t.Errorf("a Bedrock inference profile: %+v", c)
	}
	if c := caps.For("my-local-model"); c != (llmroute.Capability{}) {
		t.Errorf("an unknown model: %+v", c)
	}
	for in, msg := range map[string]string{
		"m=context:x":              "not a number",
		"m=context:0":              "not a number",
		"m=speed:3":                `unknown key "speed"`,
		"m=structured:yaml":        "not one of",
		"m":                        "is not model=",
		"m=context:1;;n=context:2": "empty entry",
		"m=context:1;m=context:2":  "twice",
		"m=context:1,context:2":    "gives context twice",
		"m=context":                "is not key:value",
	} {
		if _, err := llmroute.ParseCapabilities(in, nil); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseCapabilities(%q) = %v, want an error with %q", in, err, msg)
		}
	}
}
