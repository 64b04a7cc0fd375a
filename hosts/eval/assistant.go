package eval

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"
)

// assistantTasksJSON are the assistant part's scripted tasks (see Task).
//
//go:embed suites/assistant.json
var assistantTasksJSON []byte

var assistantTasks = mustSuite[[]Task](assistantTasksJSON)

// maxDecisions bounds the confirmations the harness decides in one turn.
const maxDecisions = 8

// runAssistant runs each task not done yet and scores its transcript.
func (r *runner) runAssistant(ctx context.Context) error {
	var as *assistantState
	if err := r.st.update(func() {
		if r.st.Assistant == nil {
			r.st.Assistant = &assistantState{}
		}
		as = r.st.Assistant
	}); err != nil {
		return err
	}
	if as.Done {
		return nil
	}
	for i := len(as.Tasks); i < len(assistantTasks); i++ {
		task := assistantTasks[i]
		r.progress.working("assistant", task.ID)
		start := time.Now()
		tr, tokens, err := r.task(ctx, task)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		run := taskRun{Transcript: tr, Result: ScoreTask(task, tr, r.h.tools)}
		run.Result.DurationMS = time.Since(start).Milliseconds()
		run.Result.TokensTotal = tokens
		if err != nil {
			run.Error = err.Error()
			run.Result.Success = false
			run.Result.Problems = append(run.Result.Problems, err.Error())
		}
		if err := r.st.update(func() { as.Tasks = append(as.Tasks, run) }); err != nil {
			return err
		}
		status := "ok"
		if !run.Result.Success {
			status = "failed"
		}
		r.progress.advance(1, "assistant: "+task.ID+" "+status)
	}
	return r.st.update(func() { as.Done = true })
}

// task plays a task's turns in one chat session, deciding each
// confirmation as the turn says (a confirmation the turn did not expect is
// rejected), and returns the transcript and the tokens the turns used.
func (r *runner) task(ctx context.Context, task Task) (Transcript, *int64, error) {
	api := r.h.api
	tr := Transcript{}
	var tokens int64
	sessionID := ""
	for ti, turn := range task.Turns {
		tr.UserTurns = append(tr.UserTurns, turn.Say)
		var reply string
		var pending []string
		byCall := map[string]int{}
		emit := func(ev event) error {
			var d struct {
				SessionID      string          `json:"session_id"`
				ToolCallID     string          `json:"tool_call_id"`
				Name           string          `json:"name"`
				Arguments      json.RawMessage `json:"arguments"`
				Result         json.RawMessage `json:"result"`
				Error          string          `json:"error"`
				Delta          string          `json:"delta"`
				ConfirmationID string          `json:"confirmation_id"`
				Message        string          `json:"message"`
				Usage          *struct {
					PromptTokens     int64 `json:"prompt_tokens"`
					CompletionTokens int64 `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return fmt.Errorf("event %s: %w", ev.Name, err)
			}
			if d.SessionID != "" {
				sessionID = d.SessionID
			}
			switch ev.Name {
			case "content":
				reply += d.Delta
			case "tool_call":
				byCall[d.ToolCallID] = len(tr.Calls)
				tr.Calls = append(tr.Calls, ToolCall{Turn: ti, Name: d.Name, Arguments: d.Arguments})
			case "tool_result":
				if i, ok := byCall[d.ToolCallID]; ok {
					tr.Calls[i].Result = d.Result
					if d.Error != "" && len(d.Result) == 0 {
						tr.Calls[i].Result, _ = json.Marshal(map[string]string{"error": d.Error})
					}
				}
			case "confirmation_required":
				i, ok := byCall[d.ToolCallID]
				if !ok {
					byCall[d.ToolCallID] = len(tr.Calls)
					i = len(tr.Calls)
					tr.Calls = append(tr.Calls, ToolCall{Turn: ti, Name: d.Name, Arguments: d.Arguments})
				}
				tr.Calls[i].Confirmation = true
				pending = append(pending, d.ConfirmationID)
			case "error":
				reply += "[error: " + d.Message + "]"
			case "done":
				if d.Usage != nil {
					tokens += d.Usage.PromptTokens + d.Usage.CompletionTokens
				}
			}
			return nil
		}
		body := map[string]any{"message": turn.Say}
		if sessionID != "" {
			body["session_id"] = sessionID
		}
		if err := api.stream(ctx, "/api/v1/agent/chat", body, emit); err != nil {
			tr.Replies = append(tr.Replies, reply)
			return tr, &tokens, err
		}
		for n := 0; len(pending) > 0 && n < maxDecisions; n++ {
			id := pending[0]
			pending = pending[1:]
			approve := turn.Decision == "approve" && turn.ExpectApproval
			if err := api.stream(ctx, "/api/v1/agent/confirm", map[string]any{"session_id": sessionID, "confirmation_id": id, "approved": approve}, emit); err != nil {
				tr.Replies = append(tr.Replies, reply)
				return tr, &tokens, fmt.Errorf("confirm: %w", err)
			}
		}
		tr.Replies = append(tr.Replies, reply)
	}
	return tr, &tokens, nil
}
