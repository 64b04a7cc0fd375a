package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func TestJudgeScoresAStage(t *testing.T) {
	t.Parallel()
	c := evalcorpus.Case{Inputs: []evalcorpus.Input{{Name: "notes.md", Kind: "note", Content: "Receipts are kept for seven years."}}}
	tests := []struct {
		name   string
		answer string
		mean   float64
		err    string
	}{
		{"scores", `{"faithful":5,"complete":4,"specific":3,"consistent":4,"notes":"ok"}`, 4, ""},
		{"a score out of range", `{"faithful":6,"complete":4,"specific":3,"consistent":4,"notes":""}`, 0, "faithful"},
		{"not JSON", `five stars`, 0, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeopenai.New(t)
			srv.Enqueue(fakeopenai.Text(tt.answer))
			cfg := &JudgeConfig{BaseURL: srv.URL(), APIKey: "sk-judge", Model: "judge-model"}
			got := judgeStage(context.Background(), cfg, c, "prd", "# PRD\n\nReceipts: 7 years.")
			if tt.err != "" {
				if got.Error == "" || !strings.Contains(got.Error, tt.err) || got.Mean != nil {
					t.Fatalf("judge = %+v, want an error naming %q", got, tt.err)
				}
				return
			}
			if got.Error != "" || got.Mean == nil || *got.Mean != tt.mean || got.Scores["faithful"] != 5 || got.Model != "judge-model" {
				t.Fatalf("judge = %+v, want mean %v", got, tt.mean)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests to the judge", len(reqs))
			}
			req := reqs[0]
			if req.Model != "judge-model" || req.ResponseSchemaName() != "eval_judge" || req.Header.Get("Authorization") != "Bearer sk-judge" {
				t.Errorf("request: model %q schema %q auth %q", req.Model, req.ResponseSchemaName(), req.Header.Get("Authorization"))
			}
			user := req.LastMessage().Content
			if !strings.Contains(user, "seven years") || !strings.Contains(user, "Receipts: 7 years.") {
				t.Errorf("the judge is not shown the material and the stage:\n%s", user)
			}
			for _, cr := range Criteria {
				if !strings.Contains(req.Messages[0].Content, cr.Name) {
					t.Errorf("the rubric lacks %s", cr.Name)
				}
			}
		})
	}
}

func TestJudgeFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     map[string]string
		wantOn  bool
		wantErr bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{EnvJudgeModel: "gpt-judge", EnvJudgeBaseURL: "http://127.0.0.1:1/v1", EnvJudgeAPIKey: "k"}, true, false},
		{map[string]string{EnvJudgeAPIKey: "k"}, false, true},
	}
	for _, tt := range tests {
		cfg, err := JudgeFromEnv(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.wantErr || (cfg != nil) != tt.wantOn {
			t.Errorf("JudgeFromEnv(%v) = %+v, %v", tt.env, cfg, err)
		}
	}
}
