package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

var voiceTools = []ports.ToolDefinition{
	{
		Name:        "list_projects",
		Description: "Lists the user's projects.",
	},
	{
		Name:        "create_story",
		Description: "Creates a story in an epic.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"epic_id":{"type":"string"},"title":{"type":"string"}},` +
			`"required":["epic_id","title"]}`),
	},
}

func TestCreateClientSecretRequest(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	before := time.Now()
	secret, err := c.CreateClientSecret(t.Context(), ports.RealtimeSessionConfig{
		Voice:        "verse",
		Instructions: "The user prefers short answers.",
		Tools:        voiceTools,
		ExpiresIn:    5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret.Value, "ek_") || len(secret.Value) < 10 {
		t.Errorf("value %q", secret.Value)
	}
	if secret.Model != DefaultRealtimeModel {
		t.Errorf("model %q", secret.Model)
	}
	if lo, hi := before.Add(5*time.Minute-time.Second), time.Now().Add(5*time.Minute+time.Second); secret.ExpiresAt.Before(lo) || secret.ExpiresAt.After(hi) {
		t.Errorf("expires at %v, want about %v", secret.ExpiresAt, before.Add(5*time.Minute))
	}
	if secret.ExpiresAt.Location() != time.UTC {
		t.Errorf("expires at %v is not UTC", secret.ExpiresAt)
	}

	reqs := f.RealtimeRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization %q", got)
	}
	if r.SessionType != "realtime" || r.Model != DefaultRealtimeModel || r.Voice != "verse" ||
		r.Instructions != "The user prefers short answers." || string(r.ToolChoice) != `"auto"` {
		t.Errorf("session type %q model %q voice %q instructions %q tool choice %s",
			r.SessionType, r.Model, r.Voice, r.Instructions, r.ToolChoice)
	}
	if r.ExpiresAfterAnchor != "created_at" || r.ExpiresAfterSeconds != 300 {
		t.Errorf("expires after %q %d", r.ExpiresAfterAnchor, r.ExpiresAfterSeconds)
	}
	if len(r.Tools) != len(voiceTools) {
		t.Fatalf("%d tools, want %d", len(r.Tools), len(voiceTools))
	}
	wantParams := []string{`{"type":"object","properties":{}}`, string(voiceTools[1].Parameters)}
	for i, tool := range r.Tools {
		if tool.Type != "function" || tool.Name != voiceTools[i].Name || tool.Description != voiceTools[i].Description {
			t.Errorf("tool %d: %+v", i, tool)
		}
		if !jsonEqual(t, tool.Parameters, json.RawMessage(wantParams[i])) {
			t.Errorf("tool %d parameters %s, want %s", i, tool.Parameters, wantParams[i])
		}
	}
	// The tools are top-level fields of each entry, as the GA API wants,
	// not nested under "function" as in Chat Completions.
	var raw struct {
		Session struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"session"`
	}
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, tool := range raw.Session.Tools {
		if _, nested := tool["function"]; nested {
			t.Errorf("tool nested under function: %v", tool)
		}
	}
}

func TestCreateClientSecretDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		configure  func(*Config)
		cfg        ports.RealtimeSessionConfig
		script     []fakeopenai.Response
		wantModel  string // sent
		wantVoice  string
		wantSecs   int
		wantSecret ports.RealtimeSecret // Value and Model; "" Value: any ek_
	}{
		{
			name:       "adapter defaults",
			wantModel:  DefaultRealtimeModel,
			wantVoice:  DefaultRealtimeVoice,
			wantSecs:   600,
			wantSecret: ports.RealtimeSecret{Model: DefaultRealtimeModel},
		},
		{
			name: "configured defaults",
			configure: func(c *Config) {
				c.RealtimeModel, c.RealtimeVoice, c.RealtimeExpiry = "gpt-realtime-mini", "marin", time.Hour
			},
			wantModel:  "gpt-realtime-mini",
			wantVoice:  "marin",
			wantSecs:   3600,
			wantSecret: ports.RealtimeSecret{Model: "gpt-realtime-mini"},
		},
		{
			name:       "session overrides, provider names a snapshot",
			configure:  func(c *Config) { c.RealtimeModel = "gpt-realtime-mini" },
			cfg:        ports.RealtimeSessionConfig{Model: "gpt-realtime", Voice: "cedar", ExpiresIn: 10 * time.Second},
			script:     []fakeopenai.Response{fakeopenai.ClientSecret("ek_fixed123").WithModel("gpt-realtime-2025-08-28")},
			wantModel:  "gpt-realtime",
			wantVoice:  "cedar",
			wantSecs:   10,
			wantSecret: ports.RealtimeSecret{Value: "ek_fixed123", Model: "gpt-realtime-2025-08-28"},
		},
		{
			name:       "longest expiry",
			cfg:        ports.RealtimeSessionConfig{ExpiresIn: 2 * time.Hour},
			wantModel:  DefaultRealtimeModel,
			wantVoice:  DefaultRealtimeVoice,
			wantSecs:   7200,
			wantSecret: ports.RealtimeSecret{Model: DefaultRealtimeModel},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.EnqueueRealtime(tt.script...)
			var configure []func(*Config)
			if tt.configure != nil {
				configure = append(configure, tt.configure)
			}
			c, _ := newTestClient(t, f, configure...)
			secret, err := c.CreateClientSecret(t.Context(), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantSecret.Value != "" && secret.Value != tt.wantSecret.Value || !strings.HasPrefix(secret.Value, "ek_") {
				t.Errorf("value %q, want %q", secret.Value, tt.wantSecret.Value)
			}
			if secret.Model != tt.wantSecret.Model {
				t.Errorf("model %q, want %q", secret.Model, tt.wantSecret.Model)
			}
			r := f.RealtimeRequests()[0]
			if r.Model != tt.wantModel || r.Voice != tt.wantVoice || r.ExpiresAfterSeconds != tt.wantSecs {
				t.Errorf("sent model %q voice %q seconds %d, want %q %q %d",
					r.Model, r.Voice, r.ExpiresAfterSeconds, tt.wantModel, tt.wantVoice, tt.wantSecs)
			}
			if len(r.Tools) != 0 || len(r.ToolChoice) != 0 {
				t.Errorf("tools %v tool choice %s sent without tools", r.Tools, r.ToolChoice)
			}
		})
	}
}

func TestCreateClientSecretErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		resp       fakeopenai.Response
		tools      []ports.ToolDefinition
		kind       ports.Kind
		code       string
		retryAfter time.Duration
		detail     string // in the message
	}{
		{name: "rate limited", resp: fakeopenai.RateLimited(2 * time.Second), kind: ports.KindRateLimited, code: "rate_limited", retryAfter: 2 * time.Second},
		{name: "quota", resp: fakeopenai.QuotaExceeded(), kind: ports.KindUpstream, code: "upstream"},
		{name: "server error", resp: fakeopenai.ServerError(), kind: ports.KindUpstream, code: "upstream"},
		{name: "overloaded with retry-after", resp: fakeopenai.Overloaded().WithHeader("Retry-After", "7"), kind: ports.KindUpstream, code: "upstream", retryAfter: 7 * time.Second},
		{name: "bad gateway, not JSON", resp: fakeopenai.Error(http.StatusBadGateway, "<html>bad gateway</html>"), kind: ports.KindUpstream, code: "upstream"},
		{
			name:   "rejected",
			resp:   fakeopenai.APIError(http.StatusBadRequest, "invalid_request_error", "", "Invalid value: 'robot'. Supported values are: 'alloy', 'ash'."),
			kind:   ports.KindInvalid,
			code:   ports.CodeInvalidRequest,
			detail: "Invalid value: 'robot'",
		},
		{
			name:   "schema the provider refuses",
			tools:  []ports.ToolDefinition{{Name: "odd", Parameters: json.RawMessage(`[]`)}},
			kind:   ports.KindInvalid,
			code:   ports.CodeInvalidRequest,
			detail: "session.tools[0].parameters",
		},
		{name: "bad key", resp: fakeopenai.Unauthorized(), kind: ports.KindUpstream, code: "upstream", detail: "credentials"},
		{name: "malformed", resp: fakeopenai.ClientSecret("").MalformedAfter(0), kind: ports.KindUpstream, code: "upstream"},
		{name: "truncated", resp: fakeopenai.ClientSecret("").Truncated(), kind: ports.KindUpstream, code: "upstream"},
		{name: "no value", resp: fakeopenai.Error(http.StatusOK, `{"value":"","expires_at":1}`), kind: ports.KindUpstream, code: "upstream"},
		{name: "too large", resp: fakeopenai.Error(http.StatusOK, `{"value":"ek_x","expires_at":1,"pad":"`+strings.Repeat("x", maxRealtimeResponse)+`"}`), kind: ports.KindUpstream, code: "upstream"},
		{name: "hangup", resp: fakeopenai.Hangup(), kind: ports.KindUpstream, code: "upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			if tt.tools == nil {
				f.EnqueueRealtime(tt.resp)
			}
			c, _ := newTestClient(t, f)
			_, err := c.CreateClientSecret(t.Context(), ports.RealtimeSessionConfig{Tools: tt.tools})
			e := wantError(t, err, tt.kind, tt.code)
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("retry after %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if !strings.Contains(e.Message, tt.detail) {
				t.Errorf("message %q does not mention %q", e.Message, tt.detail)
			}
			if n := len(f.RealtimeRequests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries)", n)
			}
		})
	}
}

func TestCreateClientSecretTimeout(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.EnqueueRealtime(fakeopenai.ClientSecret("").WithResponseDelay(time.Hour))
	c, _ := newTestClient(t, f, func(c *Config) { c.RealtimeTimeout = 50 * time.Millisecond })
	start := time.Now()
	_, err := c.CreateClientSecret(t.Context(), ports.RealtimeSessionConfig{})
	wantError(t, err, ports.KindTimeout, string(ports.KindTimeout))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("timeout also matches another error: %v", err)
	}
}

func TestCreateClientSecretCallerContext(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.EnqueueRealtime(fakeopenai.ClientSecret("").WithResponseDelay(time.Hour))
	c, _ := newTestClient(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := c.CreateClientSecret(ctx, ports.RealtimeSessionConfig{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the caller's context error", err)
	}
}

func TestCreateClientSecretInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  ports.RealtimeSessionConfig
	}{
		{"tool without name", ports.RealtimeSessionConfig{Tools: []ports.ToolDefinition{{Description: "x"}}}},
		{"schema not JSON", ports.RealtimeSessionConfig{Tools: []ports.ToolDefinition{{Name: "x", Parameters: json.RawMessage(`{`)}}}},
		{"expiry too short", ports.RealtimeSessionConfig{ExpiresIn: 5 * time.Second}},
		{"expiry too long", ports.RealtimeSessionConfig{ExpiresIn: 3 * time.Hour}},
		{"negative expiry", ports.RealtimeSessionConfig{ExpiresIn: -time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			c, _ := newTestClient(t, f)
			_, err := c.CreateClientSecret(t.Context(), tt.cfg)
			wantError(t, err, ports.KindInvalid, ports.CodeInvalidRequest)
			if n := len(f.RealtimeRequests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestCreateClientSecretAzure(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, err := New(Config{APIType: APITypeAzure, APIKey: testKey, BaseURL: f.AzureURL(), Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateClientSecret(t.Context(), ports.RealtimeSessionConfig{})
	e := wantError(t, err, ports.KindUnavailable, CodeRealtimeUnsupported)
	if !strings.Contains(e.Message, "Azure") {
		t.Errorf("message %q", e.Message)
	}
	if n := len(f.RealtimeRequests()) + len(f.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestNewVoiceConfig(t *testing.T) {
	t.Parallel()
	c, err := New(Config{APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if c.realtimeModel != DefaultRealtimeModel || c.realtimeVoice != DefaultRealtimeVoice || c.realtimeExpiry != DefaultRealtimeExpiry ||
		c.realtimeTimeout != DefaultRealtimeTimeout || c.transcribeModel != DefaultTranscribeModel || c.transcribeTimeout != DefaultTranscribeTimeout {
		t.Errorf("defaults %q %q %v %v %q %v", c.realtimeModel, c.realtimeVoice, c.realtimeExpiry, c.realtimeTimeout, c.transcribeModel, c.transcribeTimeout)
	}
	for _, expiry := range []time.Duration{time.Second, -time.Minute, 3 * time.Hour} {
		if _, err := New(Config{APIKey: "k", Model: "m", RealtimeExpiry: expiry}); !errors.Is(err, ports.ErrInternal) {
			t.Errorf("expiry %v: error %v, want internal", expiry, err)
		}
	}
	if _, err := New(Config{APIKey: "k", Model: "m", RealtimeExpiry: 2 * time.Hour, RealtimeTimeout: -1, TranscribeTimeout: -1}); err != nil {
		t.Errorf("2h expiry: %v", err)
	}
}

func TestTranscribeWAV(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	wav := fakeopenai.WAV(time.Second, 440)
	got, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: bytes.NewReader(wav), Filename: "note.wav"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != fakeopenai.DefaultTranscript || got.Language != "en" {
		t.Errorf("text %q language %q", got.Text, got.Language)
	}
	if d := got.Duration - time.Second; d < -10*time.Millisecond || d > 10*time.Millisecond {
		t.Errorf("duration %v, want about 1s", got.Duration)
	}
	reqs := f.TranscriptionRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	sum := sha256.Sum256(wav)
	if r.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("path %q authorization %q", r.Path, r.Header.Get("Authorization"))
	}
	if r.Model != DefaultTranscribeModel || r.Filename != "note.wav" || r.ResponseFormat != "verbose_json" || r.Language != "" {
		t.Errorf("model %q filename %q format %q language %q", r.Model, r.Filename, r.ResponseFormat, r.Language)
	}
	if r.Size != int64(len(wav)) || r.SHA256 != hex.EncodeToString(sum[:]) || !bytes.Equal(r.Head, wav[:64]) {
		t.Errorf("size %d sha256 %s head %q: not the WAV sent", r.Size, r.SHA256, r.Head)
	}
}

func TestTranscribeMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		configure func(*Config)
		req       ports.TranscriptionRequest
		script    []fakeopenai.Response
		want      ports.Transcription
		// sent
		model, format, language string
	}{
		{
			name:     "language hint",
			req:      ports.TranscriptionRequest{Filename: "gruss.wav", Language: "de"},
			script:   []fakeopenai.Response{fakeopenai.Text(" Guten Tag. ")},
			want:     ports.Transcription{Text: "Guten Tag.", Language: "de", Duration: 1500 * time.Millisecond, Model: DefaultTranscribeModel},
			model:    DefaultTranscribeModel,
			format:   "verbose_json",
			language: "de",
		},
		{
			name:   "detected language",
			req:    ports.TranscriptionRequest{Filename: "bonjour.wav"},
			script: []fakeopenai.Response{fakeopenai.Text("Bonjour").WithLanguage("French")},
			want:   ports.Transcription{Text: "Bonjour", Language: "fr", Duration: 1500 * time.Millisecond, Model: DefaultTranscribeModel},
			model:  DefaultTranscribeModel,
			format: "verbose_json",
		},
		{
			name:   "language without a code kept",
			req:    ports.TranscriptionRequest{Filename: "qapla.wav"},
			script: []fakeopenai.Response{fakeopenai.Text("Qapla'").WithLanguage("klingon")},
			want:   ports.Transcription{Text: "Qapla'", Language: "klingon", Duration: 1500 * time.Millisecond, Model: DefaultTranscribeModel},
			model:  DefaultTranscribeModel,
			format: "verbose_json",
		},
		{
			name:      "configured model",
			configure: func(c *Config) { c.TranscribeModel = "whisper-large-v3" },
			req:       ports.TranscriptionRequest{Filename: "a.wav"},
			want:      ports.Transcription{Text: fakeopenai.DefaultTranscript, Language: "en", Duration: 1500 * time.Millisecond, Model: "whisper-large-v3"},
			model:     "whisper-large-v3",
			format:    "verbose_json",
		},
		{
			name:   "gpt transcription model answers plain JSON, with its tokens",
			req:    ports.TranscriptionRequest{Filename: "a.wav", Model: "gpt-4o-transcribe", Language: "es"},
			script: []fakeopenai.Response{fakeopenai.Text("Hola")},
			// 1.5 s of audio in (ten tokens a second, rounded up), a word
			// and one out: the fake's usage.
			want: ports.Transcription{Text: "Hola", Language: "es", Model: "gpt-4o-transcribe",
				Usage: ports.Usage{PromptTokens: 15, CompletionTokens: 2}},
			model:    "gpt-4o-transcribe",
			format:   "json",
			language: "es",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.EnqueueTranscription(tt.script...)
			var configure []func(*Config)
			if tt.configure != nil {
				configure = append(configure, tt.configure)
			}
			c, _ := newTestClient(t, f, configure...)
			tt.req.Audio = bytes.NewReader(fakeopenai.WAV(1500*time.Millisecond, 220))
			got, err := c.Transcribe(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			r := f.TranscriptionRequests()[0]
			if r.Model != tt.model || r.ResponseFormat != tt.format || r.Language != tt.language {
				t.Errorf("sent model %q format %q language %q, want %q %q %q", r.Model, r.ResponseFormat, r.Language, tt.model, tt.format, tt.language)
			}
		})
	}
}

func TestTranscribeAzure(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, err := New(Config{APIType: APITypeAzure, APIKey: testKey, BaseURL: f.AzureURL(), Model: "gpt-4o", TranscribeModel: "whisper-deploy"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: bytes.NewReader(fakeopenai.WAV(time.Second, 440)), Filename: "a.wav"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != fakeopenai.DefaultTranscript {
		t.Errorf("text %q", got.Text)
	}
	r := f.TranscriptionRequests()[0]
	if r.Path != "/openai/deployments/whisper-deploy/audio/transcriptions" || r.Header.Get("Api-Key") != testKey {
		t.Errorf("path %q api-key %q", r.Path, r.Header.Get("Api-Key"))
	}
}

func TestTranscribeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		resp       fakeopenai.Response
		filename   string
		kind       ports.Kind
		code       string
		retryAfter time.Duration
		detail     string
	}{
		{name: "rate limited", resp: fakeopenai.RateLimited(3 * time.Second), kind: ports.KindRateLimited, code: "rate_limited", retryAfter: 3 * time.Second},
		{name: "server error", resp: fakeopenai.ServerError(), kind: ports.KindUpstream, code: "upstream"},
		{
			name:   "audio rejected",
			resp:   fakeopenai.APIError(http.StatusBadRequest, "invalid_request_error", "", "Audio file might be corrupted or unsupported"),
			kind:   ports.KindInvalid,
			code:   ports.CodeInvalidRequest,
			detail: "Audio file might be corrupted",
		},
		{name: "format the provider refuses", filename: "notes.txt", kind: ports.KindInvalid, code: ports.CodeInvalidRequest, detail: "Invalid file format"},
		{name: "bad key", resp: fakeopenai.Unauthorized(), kind: ports.KindUpstream, code: "upstream"},
		{name: "malformed", resp: fakeopenai.Text("x").MalformedAfter(0), kind: ports.KindUpstream, code: "upstream"},
		{name: "truncated", resp: fakeopenai.Text("x").Truncated(), kind: ports.KindUpstream, code: "upstream"},
		{name: "empty body", resp: fakeopenai.Error(http.StatusOK, ""), kind: ports.KindUpstream, code: "upstream"},
		{name: "too large", resp: fakeopenai.Error(http.StatusOK, `{"text":"`+strings.Repeat("x", maxTranscriptionResponse)+`"}`), kind: ports.KindUpstream, code: "upstream"},
		{name: "hangup", resp: fakeopenai.Hangup(), kind: ports.KindUpstream, code: "upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			if tt.filename == "" {
				f.EnqueueTranscription(tt.resp)
				tt.filename = "a.wav"
			}
			c, _ := newTestClient(t, f)
			_, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: bytes.NewReader(fakeopenai.WAV(time.Second, 440)), Filename: tt.filename})
			e := wantError(t, err, tt.kind, tt.code)
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("retry after %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if !strings.Contains(e.Message, tt.detail) {
				t.Errorf("message %q does not mention %q", e.Message, tt.detail)
			}
			if n := len(f.TranscriptionRequests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries)", n)
			}
		})
	}
}

func TestTranscribeTimeout(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.EnqueueTranscription(fakeopenai.Text("late").WithResponseDelay(time.Hour))
	c, _ := newTestClient(t, f, func(c *Config) { c.TranscribeTimeout = 50 * time.Millisecond })
	start := time.Now()
	_, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: bytes.NewReader(fakeopenai.WAV(time.Second, 440)), Filename: "a.wav"})
	wantError(t, err, ports.KindTimeout, string(ports.KindTimeout))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("timeout also matches another error: %v", err)
	}
}

// stalledReader yields some audio, then blocks until ctx ends.
type stalledReader struct {
	ctx  context.Context
	sent bool
}

func (s *stalledReader) Read(p []byte) (int, error) {
	if !s.sent {
		s.sent = true
		return copy(p, fakeopenai.WAV(10*time.Millisecond, 440)), nil
	}
	<-s.ctx.Done()
	return 0, io.ErrUnexpectedEOF
}

func TestTranscribeAudioErrors(t *testing.T) {
	t.Parallel()
	readErr := errors.New("client went away")
	tests := []struct {
		name  string
		audio io.Reader
		kind  ports.Kind
		code  string
		cause error
	}{
		{"read error", io.MultiReader(strings.NewReader("RIFF"), iotestErrReader{readErr}), ports.KindInvalid, ports.CodeInvalidRequest, readErr},
		{"upload too large", iotestErrReader{&http.MaxBytesError{Limit: 25 << 20}}, ports.KindPayloadTooLarge, string(ports.KindPayloadTooLarge), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			c, _ := newTestClient(t, f)
			_, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: tt.audio, Filename: "a.wav"})
			wantError(t, err, tt.kind, tt.code)
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("error %v does not wrap the read error", err)
			}
			if n := len(f.TranscriptionRequests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}

	t.Run("stalled upload", func(t *testing.T) {
		t.Parallel()
		f := fakeopenai.New(t)
		c, _ := newTestClient(t, f, func(c *Config) { c.TranscribeTimeout = 50 * time.Millisecond })
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(200*time.Millisecond, cancel) // the reader's own deadline, as an HTTP server's would be
		_, err := c.Transcribe(t.Context(), ports.TranscriptionRequest{Audio: &stalledReader{ctx: ctx}, Filename: "a.wav"})
		// The reader blocks past the timeout; its eventual error is reported
		// as the timeout it is.
		wantError(t, err, ports.KindTimeout, string(ports.KindTimeout))
	})
}

// iotestErrReader fails every read with err.
type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

func TestTranscribeInvalidRequest(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	for _, req := range []ports.TranscriptionRequest{
		{Filename: "a.wav"},
		{Audio: strings.NewReader("x")},
	} {
		_, err := c.Transcribe(t.Context(), req)
		wantError(t, err, ports.KindInvalid, ports.CodeInvalidRequest)
	}
	if n := len(f.TranscriptionRequests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestLanguageCode(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"english":        "en",
		"English":        "en",
		" german ":       "de",
		"javanese":       "jv",
		"cantonese":      "yue",
		"haitian creole": "ht",
		"en":             "en",
		"pt-BR":          "pt-BR",
		"klingon":        "klingon",
		"":               "",
	}
	for in, want := range tests {
		if got := languageCode(in); got != want {
			t.Errorf("languageCode(%q) = %q, want %q", in, got, want)
		}
	}
	if n := len(whisperLanguages); n < 99 {
		t.Errorf("%d languages, want Whisper's 99 and their aliases", n)
	}
}
