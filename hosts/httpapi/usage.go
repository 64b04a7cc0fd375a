package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
)

// Usage is what the HTTP layer needs of the usage report and of the token
// budgets (*usage.Service has it).
type Usage interface {
	Report(ctx context.Context, q usage.Query) (usage.Report, error)
	Budget(ctx context.Context) (usage.BudgetStatus, error)
	SetBudget(ctx context.Context, tokens *int64) (usage.BudgetStatus, error)
	CheckBudget(ctx context.Context) error
}

func (s *Server) usageRoutes() {
	s.handle(http.MethodGet, "/api/v1/usage", s.getUsage)
	s.budgetRoutes()
}

type usageTotalJSON struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	Calls            int64 `json:"calls"`
}

type usageGroupJSON struct {
	Key string `json:"key"`
	usageTotalJSON
}

type usageJSON struct {
	From    string           `json:"from"`
	To      string           `json:"to"`
	GroupBy string           `json:"group_by"`
	UserID  *string          `json:"user_id"`
	Total   usageTotalJSON   `json:"total"`
	Groups  []usageGroupJSON `json:"groups"`
}

func usageTotalOut(t ports.UsageTotal) usageTotalJSON {
	return usageTotalJSON{PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
		TotalTokens: t.PromptTokens + t.CompletionTokens, Calls: t.Calls}
}

func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	rep, err := s.d.Usage.Report(r.Context(), usage.Query{
		From: q.Get("from"), To: q.Get("to"), GroupBy: q.Get("group_by"), UserID: q.Get("user_id"),
	})
	if err != nil {
		return err
	}
	out := usageJSON{From: rep.From.Format(time.DateOnly), To: rep.To.Format(time.DateOnly), GroupBy: string(rep.GroupBy),
		Total: usageTotalOut(rep.Total), Groups: make([]usageGroupJSON, len(rep.Groups))}
	if rep.UserID != "" {
		out.UserID = &rep.UserID
	}
	for i, g := range rep.Groups {
		out.Groups[i] = usageGroupJSON{Key: g.Key, usageTotalJSON: usageTotalOut(g)}
	}
	return writeJSON(w, http.StatusOK, out)
}
