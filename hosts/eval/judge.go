package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/ports"
)

// The judge's settings: off unless DEVPILOT_EVAL_JUDGE_MODEL or
// DEVPILOT_MODEL_JUDGE is set. DEVPILOT_EVAL_JUDGE_* name an
// OpenAI-compatible API of the judge's own; DEVPILOT_MODEL_JUDGE, a
// failover list like DEVPILOT_MODEL_CHAT's, uses devpilot's providers
// (OPENAI_*, ANTHROPIC_*, DEVPILOT_BEDROCK_*).
const (
	EnvJudgeBaseURL = "DEVPILOT_EVAL_JUDGE_BASE_URL"
	EnvJudgeAPIKey  = "DEVPILOT_EVAL_JUDGE_API_KEY"
	EnvJudgeModel   = "DEVPILOT_EVAL_JUDGE_MODEL"
)

// JudgeConfig points the optional judge model at a provider.
type JudgeConfig struct {
	BaseURL string
	APIKey  string
	Model   string
	// Timeout bounds one judgement (2 minutes when zero).
	Timeout time.Duration
	// LLM, when set, is the judge (DEVPILOT_MODEL_JUDGE's route) instead
	// of an OpenAI-compatible client of BaseURL and APIKey.
	LLM ports.LLM
}

// JudgeFromEnv reads the judge's settings; nil (no judge) when no model is
// set. Errors: a base URL or key without a model (*UsageError).
func JudgeFromEnv(getenv func(string) string) (*JudgeConfig, error) {
	c := JudgeConfig{BaseURL: strings.TrimSpace(getenv(EnvJudgeBaseURL)), APIKey: strings.TrimSpace(getenv(EnvJudgeAPIKey)),
		Model: strings.TrimSpace(getenv(EnvJudgeModel))}
	if route := strings.TrimSpace(getenv(app.EnvModelJudge)); route != "" {
		if c.Model != "" || c.BaseURL != "" || c.APIKey != "" {
			return nil, usageErrorf("%s and %s name two judges: set one", app.EnvModelJudge, EnvJudgeModel)
		}
		cfg, err := app.Load(app.ModeRun, func(k string) string {
			if k == app.EnvSandbox {
				return "0"
			}
			return getenv(k)
		})
		if err != nil {
			return nil, usageErrorf("the judge's configuration: %v", err)
		}
		llm, err := app.NewModelRouter(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, usageErrorf("the judge's model: %v", err)
		}
		ts := cfg.Models.Routes[llmroute.FeatureJudge]
		return &JudgeConfig{Model: ts[0].String(), LLM: llm}, nil
	}
	if c.Model == "" {
		if c.BaseURL != "" || c.APIKey != "" {
			return nil, usageErrorf("%s or %s is set without %s: set the judge's model too, or unset them", EnvJudgeBaseURL, EnvJudgeAPIKey, EnvJudgeModel)
		}
		return nil, nil
	}
	return &c, nil
}

// Criteria are the judge's fixed rubric, the same for every stage, each
// scored 1 (poor) to 5 (excellent).
var Criteria = []struct{ Name, Question string }{
	{"faithful", "Is every statement supported by the raw material, with nothing invented (names, numbers, rules)?"},
	{"complete", "Does it carry every fact of the raw material that matters at this stage (rules, numbers, deadlines, constraints)?"},
	{"specific", "Is it concrete and testable rather than vague (measurable criteria, named paths and commands where due)?"},
	{"consistent", "Is it consistent with itself and with the ids it traces to (requirements, epics, stories)?"},
}

// JudgeScore is the judge's scores of one stage.
type JudgeScore struct {
	Model  string         `json:"model"`
	Scores map[string]int `json:"scores,omitempty"`
	// Mean is the mean of the scores (1 to 5), nil when the judge failed.
	Mean  *float64 `json:"mean"`
	Notes string   `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
}

// judgeSchema is the JSON answer asked of the judge.
func judgeSchema() json.RawMessage {
	props := map[string]any{"notes": map[string]any{"type": "string"}}
	required := []string{}
	for _, c := range Criteria {
		props[c.Name] = map[string]any{"type": "integer", "description": c.Question + " 1 to 5."}
		required = append(required, c.Name)
	}
	required = append(required, "notes")
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return b
}

// maxJudgeText bounds each text put in a judge request.
const maxJudgeText = 60_000

// judgeStage asks the judge to score one stage's artifact against the
// case's raw material. A failure is recorded in the score, not returned.
func judgeStage(ctx context.Context, cfg *JudgeConfig, c evalcorpus.Case, stage, artifact string) *JudgeScore {
	score := &JudgeScore{Model: cfg.Model}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	llm := cfg.LLM
	if llm == nil {
		c, err := openai.New(openai.Config{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, Model: cfg.Model, Timeout: timeout})
		if err != nil {
			score.Error = err.Error()
			return score
		}
		llm = c
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		ctx = ports.WithAttribution(ctx, ports.Attribution{Feature: llmroute.FeatureJudge})
	}
	var rubric strings.Builder
	for _, cr := range Criteria {
		fmt.Fprintf(&rubric, "- %s: %s\n", cr.Name, cr.Question)
	}
	var material strings.Builder
	for _, in := range c.Inputs {
		fmt.Fprintf(&material, "<input name=%q kind=%q>\n%s\n</input>\n", in.Name, in.Kind, clip(in.Content))
	}
	res, err := llm.Chat(ctx, ports.ChatRequest{
		Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: "You grade one stage (" + stage + ") of a software specification written from raw material. " +
				"Score each criterion from 1 (poor) to 5 (excellent) and say why in notes, briefly.\n\nCriteria:\n" + rubric.String()},
			{Role: ports.MessageUser, Content: "# Raw material\n\n" + material.String() + "\n# The " + stage + " stage\n\n" + clip(artifact)},
		},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "eval_judge", Schema: judgeSchema(), Strict: true},
	}, nil)
	if err != nil {
		score.Error = err.Error()
		return score
	}
	var answer map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Content)), &answer); err != nil {
		score.Error = "the judge's answer is not JSON: " + err.Error()
		return score
	}
	score.Scores = map[string]int{}
	sum := 0
	for _, cr := range Criteria {
		v, ok := answer[cr.Name].(float64)
		if !ok || v != float64(int(v)) || v < 1 || v > 5 {
			score.Scores, score.Error = nil, fmt.Sprintf("the judge's %s is not a whole number from 1 to 5: %v", cr.Name, answer[cr.Name])
			return score
		}
		score.Scores[cr.Name] = int(v)
		sum += int(v)
	}
	mean := float64(sum) / float64(len(Criteria))
	score.Mean = &mean
	score.Notes, _ = answer["notes"].(string)
	return score
}

func clip(s string) string {
	if len(s) <= maxJudgeText {
		return s
	}
	return s[:maxJudgeText] + "\n[… cut]"
}
