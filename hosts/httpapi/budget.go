package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
)

func (s *Server) budgetRoutes() {
	s.handle(http.MethodGet, "/api/v1/usage/budget", s.getBudget)
	s.handle(http.MethodPut, "/api/v1/usage/budget", s.putBudget)
}

type budgetJSON struct {
	MonthlyTokens *int64    `json:"monthly_tokens"`
	Used          int64     `json:"used"`
	PeriodStart   time.Time `json:"period_start"`
	PeriodEnd     time.Time `json:"period_end"`
	Source        string    `json:"source"`
}

func budgetOut(st usage.BudgetStatus) budgetJSON {
	return budgetJSON{MonthlyTokens: st.MonthlyTokens, Used: st.Used, PeriodStart: st.PeriodStart.UTC(),
		PeriodEnd: st.PeriodEnd.UTC(), Source: st.Source}
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) error {
	st, err := s.d.Usage.Budget(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, budgetOut(st))
}

type putBudgetRequest struct {
	// MonthlyTokens is raw to tell null (back to the default) from absent.
	MonthlyTokens json.RawMessage `json:"monthly_tokens"`
}

func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) error {
	var req putBudgetRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.MonthlyTokens == nil {
		return missing("monthly_tokens")
	}
	var tokens *int64
	if !bytes.Equal(req.MonthlyTokens, []byte("null")) {
		var n int64
		if err := json.Unmarshal(req.MonthlyTokens, &n); err != nil {
			return ports.Invalid("invalid token budget",
				ports.FieldError{Field: "monthly_tokens", Reason: "must be a whole number from 0 to 1000000000000, or null"})
		}
		tokens = &n
	}
	st, err := s.d.Usage.SetBudget(r.Context(), tokens)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, budgetOut(st))
}

// checkBudget refuses costly work up front (429 budget_exceeded, with
// Retry-After) when the caller's organisation has used its monthly token
// budget; without the usage service it allows everything.
func (s *Server) checkBudget(r *http.Request) error {
	if s.d.Usage == nil {
		return nil
	}
	return s.d.Usage.CheckBudget(r.Context())
}
