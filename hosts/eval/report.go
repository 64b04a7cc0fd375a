package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
)

// The report files written in the run directory.
const (
	ReportJSON     = "report.json"
	ReportMarkdown = "report.md"
)

// reportVersion is the format of report.json.
const reportVersion = 1

// Report is a run's report (report.json).
type Report struct {
	Version   int       `json:"version"`
	StartedAt time.Time `json:"started_at"`
	WrittenAt time.Time `json:"written_at"`
	// Model is the model devpilot was configured with, Provider the
	// provider's base URL ("sandbox" for the sandbox's fake).
	Model     string           `json:"model"`
	Provider  string           `json:"provider"`
	Parts     []string         `json:"parts"`
	Cases     []CaseReport     `json:"cases"`
	Content   *ContentReport   `json:"content,omitempty"`
	Assistant *AssistantReport `json:"assistant,omitempty"`
	Totals    Totals           `json:"totals"`
	// Summary is every metric by name, flat: what compare reads. A nil
	// value is a metric this run could not measure.
	Summary map[string]*float64 `json:"summary"`
}

// CaseReport is one case's specification run.
type CaseReport struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Domain    string `json:"domain"`
	Kind      string `json:"kind"`
	SessionID string `json:"session_id,omitempty"`
	// Status is done, failed or incomplete (an interrupted run).
	Status  string        `json:"status"`
	Error   string        `json:"error,omitempty"`
	Stages  []StageReport `json:"stages"`
	Metrics CaseMetrics   `json:"metrics"`
}

// StageReport is one stage of a case: what it cost and how it went.
type StageReport struct {
	Stage            string         `json:"stage"`
	Status           string         `json:"status"`
	DurationMS       *int64         `json:"duration_ms"`
	PromptTokens     *int64         `json:"prompt_tokens"`
	CompletionTokens *int64         `json:"completion_tokens"`
	TokensSource     string         `json:"tokens_source,omitempty"`
	PromptVersion    string         `json:"prompt_version"`
	Model            string         `json:"model"`
	Calls            *int           `json:"calls"`
	FirstTryValid    *float64       `json:"first_try_valid"`
	InvalidAnswers   *int           `json:"invalid_answers"`
	RepairTurns      *int           `json:"repair_turns"`
	FindingsLeft     int            `json:"findings_left"`
	FindingsByKind   map[string]int `json:"findings_by_kind"`
	FactCoverage     *float64       `json:"fact_coverage,omitempty"`
	Judge            *JudgeScore    `json:"judge,omitempty"`
	Error            string         `json:"error,omitempty"`
}

// CaseMetrics are a case's metrics over its artifacts.
type CaseMetrics struct {
	RequirementCoverage *float64       `json:"requirement_coverage"`
	FactCoverage        FactCoverages  `json:"fact_coverage"`
	Grounding           Grounding      `json:"grounding"`
	CrossPRPConflicts   *int           `json:"cross_prp_conflicts"`
	Conflicts           []string       `json:"conflicts,omitempty"`
	FirstTryValid       *float64       `json:"first_try_valid"`
	RepairTurns         *int           `json:"repair_turns"`
	FindingsLeft        int            `json:"findings_left"`
	FindingsByKind      map[string]int `json:"findings_by_kind"`
	DurationMS          int64          `json:"duration_ms"`
	PromptTokens        *int64         `json:"prompt_tokens"`
	CompletionTokens    *int64         `json:"completion_tokens"`
}

// FactCoverages are the shares of a case's facts each document carries, and
// the facts the PRPs miss.
type FactCoverages struct {
	PRD           *float64 `json:"prd"`
	Stories       *float64 `json:"stories"`
	PRPs          *float64 `json:"prps"`
	MissingInPRPs []string `json:"missing_in_prps,omitempty"`
}

// ContentReport is the content part: each draft and the means.
type ContentReport struct {
	Drafts              []draftResult `json:"drafts"`
	FindingsPerDraft    *float64      `json:"findings_per_draft"`
	BannedWordsPerDraft *float64      `json:"banned_words_per_draft"`
	Failed              int           `json:"failed"`
	Error               string        `json:"error,omitempty"`
}

// AssistantReport is the assistant part: each task's result and the shares.
type AssistantReport struct {
	Tasks       []TaskResult `json:"tasks"`
	TaskSuccess *float64     `json:"task_success"`
	Error       string       `json:"error,omitempty"`
}

// Totals are the run's totals.
type Totals struct {
	Cases       int `json:"cases"`
	CasesFailed int `json:"cases_failed"`
	// StageDurationMS is the time of every stage, summed.
	StageDurationMS int64 `json:"stage_duration_ms"`
	// PromptTokens and CompletionTokens are the org's use during the run
	// (the usage API), nil when it could not be read.
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
}

// buildReport computes the report of a run's state.
func buildReport(st *state, corpus []evalcorpus.Case, tools map[string]ToolSpec, usageNow *usageTotals) Report {
	st.mu.Lock()
	defer st.mu.Unlock()
	rep := Report{Version: reportVersion, StartedAt: st.StartedAt, WrittenAt: time.Now().UTC(), Model: st.Model, Provider: st.Provider,
		Parts: st.Parts, Cases: []CaseReport{}}
	byID := map[string]evalcorpus.Case{}
	for _, c := range corpus {
		byID[c.ID] = c
	}
	if slices.Contains(st.Parts, PartSpec) {
		for _, id := range st.Cases {
			cr := caseReport(byID[id], st.Spec[id])
			rep.Totals.Cases++
			if cr.Status != "done" {
				rep.Totals.CasesFailed++
			}
			rep.Totals.StageDurationMS += cr.Metrics.DurationMS
			rep.Cases = append(rep.Cases, cr)
		}
	}
	if c := st.Content; c != nil {
		cr := &ContentReport{Drafts: c.Drafts, Error: c.Error}
		var findings, banned, n int
		for _, d := range c.Drafts {
			if d.Status == "failed" {
				cr.Failed++
				continue
			}
			n++
			findings += len(d.Checks)
			banned += len(d.BannedWords)
		}
		cr.FindingsPerDraft, cr.BannedWordsPerDraft = ratio(findings, n), ratio(banned, n)
		rep.Content = cr
	}
	if a := st.Assistant; a != nil {
		ar := &AssistantReport{Tasks: []TaskResult{}, Error: a.Error}
		ok := 0
		for _, t := range a.Tasks {
			ar.Tasks = append(ar.Tasks, t.Result)
			if t.Result.Success {
				ok++
			}
		}
		ar.TaskSuccess = share(ok, len(a.Tasks))
		rep.Assistant = ar
	}
	if usageNow != nil && st.UsageAtStart != nil {
		p, c := usageNow.PromptTokens-st.UsageAtStart.PromptTokens, usageNow.CompletionTokens-st.UsageAtStart.CompletionTokens
		rep.Totals.PromptTokens, rep.Totals.CompletionTokens = &p, &c
	}
	rep.Summary = summarize(rep)
	return rep
}

func ratio(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	v := float64(n) / float64(of)
	return &v
}

func caseReport(c evalcorpus.Case, cs *caseState) CaseReport {
	cr := CaseReport{ID: c.ID, Title: c.Title, Domain: c.Domain, Kind: c.Kind, Status: "incomplete", Stages: []StageReport{}}
	if cs == nil {
		return cr
	}
	cr.SessionID, cr.Error = cs.SessionID, cs.Error
	data := map[string]json.RawMessage{}
	m := &cr.Metrics
	var firstTry []float64
	for _, s := range cs.Stages {
		sr := StageReport{Stage: s.Stage, Status: s.Status, DurationMS: s.DurationMS, PromptTokens: s.PromptTokens,
			CompletionTokens: s.CompletionTokens, TokensSource: s.TokensSource, PromptVersion: s.PromptVersion, Model: s.Model,
			Judge: s.Judge, Error: s.Error}
		if g := s.Generation; g != nil {
			sr.Calls, sr.InvalidAnswers, sr.RepairTurns = g.Calls, g.InvalidAnswers, g.RepairTurns
		}
		sr.FirstTryValid = s.Generation.FirstTryValidShare()
		sr.FindingsLeft, sr.FindingsByKind = FindingsLeft(s.Checks, s.Generation)
		if s.Status == "ready" {
			data[s.Stage] = s.Data
			if s.Stage == "prd" || s.Stage == "stories" || s.Stage == "prps" {
				sr.FactCoverage = FactCoverage(c, s.Data)
			}
		}
		if sr.FirstTryValid != nil {
			firstTry = append(firstTry, *sr.FirstTryValid)
		}
		if sr.RepairTurns != nil {
			m.RepairTurns = addInt(m.RepairTurns, *sr.RepairTurns)
		}
		m.FindingsLeft += sr.FindingsLeft
		for k, v := range sr.FindingsByKind {
			if m.FindingsByKind == nil {
				m.FindingsByKind = map[string]int{}
			}
			m.FindingsByKind[k] += v
		}
		if sr.DurationMS != nil {
			m.DurationMS += *sr.DurationMS
		}
		if sr.PromptTokens != nil {
			m.PromptTokens = addInt64(m.PromptTokens, *sr.PromptTokens)
		}
		if sr.CompletionTokens != nil {
			m.CompletionTokens = addInt64(m.CompletionTokens, *sr.CompletionTokens)
		}
		cr.Stages = append(cr.Stages, sr)
	}
	m.FirstTryValid = mean(firstTry)
	if prd, ok := data["prd"]; ok {
		m.FactCoverage.PRD = FactCoverage(c, prd)
	}
	if stories, ok := data["stories"]; ok {
		m.FactCoverage.Stories = FactCoverage(c, stories)
	}
	if prps, ok := data["prps"]; ok {
		m.FactCoverage.PRPs = FactCoverage(c, prps)
		m.FactCoverage.MissingInPRPs = MissingFacts(c, prps)
		m.RequirementCoverage = RequirementCoverage(data["prd"], data["stories"], prps)
		m.Grounding = GroundingOf(c.Repo, prps)
		n, list := Conflicts(prps)
		m.CrossPRPConflicts, m.Conflicts = &n, list
	}
	switch {
	case cs.Done && cs.Error == "" && len(cs.Stages) == len(Stages):
		cr.Status = "done"
	case cs.Done:
		cr.Status = "failed"
	}
	return cr
}

func addInt(p *int, v int) *int {
	n := v
	if p != nil {
		n += *p
	}
	return &n
}

func addInt64(p *int64, v int64) *int64 {
	n := v
	if p != nil {
		n += *p
	}
	return &n
}

func mean(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	s := 0.0
	for _, v := range vs {
		s += v
	}
	s /= float64(len(vs))
	return &s
}

func f64[T int | int64](v T) *float64 {
	f := float64(v)
	return &f
}

// summarize flattens a report's metrics by name: the run's (means over the
// cases that have the metric, sums for counts) and each case's.
func summarize(rep Report) map[string]*float64 {
	s := map[string]*float64{}
	if slices.Contains(rep.Parts, PartSpec) {
		var reqCov, prd, stories, prps, ground, firstTry, judge []float64
		var conflicts, repairs, findings, failedStages int
		var haveConflicts, haveRepairs bool
		for _, c := range rep.Cases {
			m := c.Metrics
			pre := "case." + c.ID + "."
			s[pre+"requirement_coverage"] = m.RequirementCoverage
			s[pre+"fact_coverage.prd"] = m.FactCoverage.PRD
			s[pre+"fact_coverage.stories"] = m.FactCoverage.Stories
			s[pre+"fact_coverage.prps"] = m.FactCoverage.PRPs
			s[pre+"grounding"] = m.Grounding.Share
			s[pre+"first_try_valid"] = m.FirstTryValid
			s[pre+"findings_left"] = f64(m.FindingsLeft)
			s[pre+"time_ms"] = f64(m.DurationMS)
			s[pre+"cross_prp_conflicts"] = nil
			if m.CrossPRPConflicts != nil {
				s[pre+"cross_prp_conflicts"] = f64(*m.CrossPRPConflicts)
				conflicts += *m.CrossPRPConflicts
				haveConflicts = true
			}
			s[pre+"repair_turns"] = nil
			if m.RepairTurns != nil {
				s[pre+"repair_turns"] = f64(*m.RepairTurns)
				repairs += *m.RepairTurns
				haveRepairs = true
			}
			for k, v := range m.FindingsByKind {
				s["spec.findings_left."+k] = f64(int(valueOr(s["spec.findings_left."+k])) + v)
			}
			findings += m.FindingsLeft
			for _, st := range c.Stages {
				if st.Status != "ready" {
					failedStages++
				}
				if st.Judge != nil && st.Judge.Mean != nil {
					judge = append(judge, *st.Judge.Mean)
				}
			}
			for _, p := range []struct {
				v    *float64
				into *[]float64
			}{{m.RequirementCoverage, &reqCov}, {m.FactCoverage.PRD, &prd}, {m.FactCoverage.Stories, &stories},
				{m.FactCoverage.PRPs, &prps}, {m.Grounding.Share, &ground}, {m.FirstTryValid, &firstTry}} {
				if p.v != nil {
					*p.into = append(*p.into, *p.v)
				}
			}
		}
		s["spec.requirement_coverage"] = mean(reqCov)
		s["spec.fact_coverage.prd"] = mean(prd)
		s["spec.fact_coverage.stories"] = mean(stories)
		s["spec.fact_coverage.prps"] = mean(prps)
		s["spec.grounding"] = mean(ground)
		s["spec.first_try_valid"] = mean(firstTry)
		s["spec.judge_mean"] = mean(judge)
		s["spec.findings_left"] = f64(findings)
		s["spec.stages_failed"] = f64(failedStages)
		s["spec.cases_failed"] = f64(rep.Totals.CasesFailed)
		s["spec.cross_prp_conflicts"], s["spec.repair_turns"] = nil, nil
		if haveConflicts {
			s["spec.cross_prp_conflicts"] = f64(conflicts)
		}
		if haveRepairs {
			s["spec.repair_turns"] = f64(repairs)
		}
		s["time.stages_ms"] = f64(rep.Totals.StageDurationMS)
	}
	if c := rep.Content; c != nil {
		s["content.findings_per_draft"] = c.FindingsPerDraft
		s["content.banned_words_per_draft"] = c.BannedWordsPerDraft
		s["content.drafts_failed"] = f64(c.Failed)
	}
	if a := rep.Assistant; a != nil {
		s["assistant.task_success"] = a.TaskSuccess
		counts := map[string]int{}
		for _, t := range a.Tasks {
			for name, ok := range map[string]bool{"right_tool": t.RightTool, "valid_arguments": t.ValidArgs,
				"approval_for_every_write": t.Approvals, "no_invented_id": t.NoInvented} {
				if ok {
					counts[name]++
				}
			}
			v := 0.0
			if t.Success {
				v = 1
			}
			s["assistant.task."+t.ID+".success"] = &v
		}
		for _, name := range []string{"right_tool", "valid_arguments", "approval_for_every_write", "no_invented_id"} {
			s["assistant."+name] = share(counts[name], len(a.Tasks))
		}
	}
	if rep.Totals.PromptTokens != nil {
		s["tokens.prompt"] = f64(*rep.Totals.PromptTokens)
		s["tokens.completion"] = f64(*rep.Totals.CompletionTokens)
	}
	return s
}

func valueOr(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// direction says which way a metric is better: 1 higher, -1 lower, 0
// neither (time and tokens, reported but never a regression).
func direction(name string) int {
	switch {
	case strings.HasPrefix(name, "tokens.") || strings.HasPrefix(name, "time.") || strings.HasSuffix(name, "time_ms"):
		return 0
	case strings.Contains(name, "conflicts"), strings.Contains(name, "findings"), strings.Contains(name, "repair_turns"),
		strings.Contains(name, "failed"), strings.Contains(name, "banned_words"):
		return -1
	}
	return 1
}

// isShare says a metric is a share from 0 to 1, compared by its absolute
// change; other metrics (counts, the judge's 1–5 mean) by their change
// relative to the first run's value.
func isShare(name string) bool { return direction(name) == 1 && !strings.HasSuffix(name, "judge_mean") }

// writeReports writes report.json and report.md in dir.
func writeReports(dir string, rep Report) error {
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), append(raw, '\n'), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportMarkdown), []byte(Markdown(rep)), 0o600)
}

// LoadReport reads a report: a report.json file, or a run directory's.
func LoadReport(path string) (Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ReportJSON)
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Report{}, usageErrorf("%s: no such report (give a run directory or its %s)", path, ReportJSON)
	}
	if err != nil {
		return Report{}, err
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Summary == nil {
		return Report{}, usageErrorf("%s is not a devpilot eval report", path)
	}
	return rep, nil
}

// Change is one metric's change from run A to run B.
type Change struct {
	Metric     string   `json:"metric"`
	A          *float64 `json:"a"`
	B          *float64 `json:"b"`
	Delta      *float64 `json:"delta"`
	Regression bool     `json:"regression"`
}

// Compare compares every metric of a's summary and b's. A metric regresses
// when it moves the worse way (coverage, grounding, first-try validity and
// task success down; conflicts, findings, repair turns and failures up) by
// more than threshold: an absolute change for shares (0 to 1), a change
// relative to A's value (at least 1) for counts and the judge's mean. Time
// and tokens are shown, never regressions; a metric only one run has is
// shown, not judged.
func Compare(a, b Report, threshold float64) []Change {
	names := map[string]bool{}
	for n := range a.Summary {
		names[n] = true
	}
	for n := range b.Summary {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []Change
	for _, n := range sorted {
		c := Change{Metric: n, A: a.Summary[n], B: b.Summary[n]}
		if c.A != nil && c.B != nil {
			d := *c.B - *c.A
			c.Delta = &d
			tol := threshold
			if !isShare(n) {
				tol = threshold * math.Max(1, math.Abs(*c.A))
			}
			if dir := direction(n); dir != 0 && -float64(dir)*d > tol+1e-12 {
				c.Regression = true
			}
		}
		out = append(out, c)
	}
	return out
}

// PrintComparison writes the changes as a table, then a line per
// regression; it returns how many regressed.
func PrintComparison(w io.Writer, changes []Change, threshold float64) int {
	width := len("metric")
	for _, c := range changes {
		width = max(width, len(c.Metric))
	}
	fmt.Fprintf(w, "%-*s  %12s  %12s  %12s\n", width, "metric", "A", "B", "change")
	n := 0
	for _, c := range changes {
		mark := ""
		if c.Regression {
			mark = "  REGRESSION"
			n++
		}
		delta := "n/a"
		if c.Delta != nil {
			delta = fmt.Sprintf("%+.4g", *c.Delta)
		}
		fmt.Fprintf(w, "%-*s  %12s  %12s  %12s%s\n", width, c.Metric, num(c.A), num(c.B), delta, mark)
	}
	for _, c := range changes {
		if c.Regression {
			fmt.Fprintf(w, "regression: %s went from %s to %s (threshold %g)\n", c.Metric, num(c.A), num(c.B), threshold)
		}
	}
	if n == 0 {
		fmt.Fprintf(w, "no regression past the threshold %g\n", threshold)
	}
	return n
}

func num(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.4g", *p)
}

func pct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", *p*100)
}

func ms(p *int64) string {
	if p == nil {
		return "n/a"
	}
	return (time.Duration(*p) * time.Millisecond).Round(time.Millisecond).String()
}

func intOr(p *int) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprint(*p)
}

func tokens(p, c *int64) string {
	if p == nil && c == nil {
		return "n/a"
	}
	return fmt.Sprintf("%s / %s", i64(p), i64(c))
}

func i64(p *int64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprint(*p)
}

// Summary is the few lines `devpilot eval` prints when a run ends.
func Summary(rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model %s (%s); parts %s\n", cmpOr(rep.Model, "n/a"), cmpOr(rep.Provider, "n/a"), strings.Join(rep.Parts, ", "))
	if slices.Contains(rep.Parts, PartSpec) {
		s := rep.Summary
		fmt.Fprintf(&b, "spec: %d cases (%d failed); requirement coverage %s; facts in PRD %s, stories %s, PRPs %s; grounding %s; cross-PRP conflicts %s; first-try valid %s; repair turns %s; findings left %s\n",
			rep.Totals.Cases, rep.Totals.CasesFailed, pct(s["spec.requirement_coverage"]), pct(s["spec.fact_coverage.prd"]),
			pct(s["spec.fact_coverage.stories"]), pct(s["spec.fact_coverage.prps"]), pct(s["spec.grounding"]),
			num(s["spec.cross_prp_conflicts"]), pct(s["spec.first_try_valid"]), num(s["spec.repair_turns"]), num(s["spec.findings_left"]))
	}
	if c := rep.Content; c != nil {
		fmt.Fprintf(&b, "content: %d drafts (%d failed); brand-check findings per draft %s; banned words per draft %s\n",
			len(c.Drafts), c.Failed, num(c.FindingsPerDraft), num(c.BannedWordsPerDraft))
	}
	if a := rep.Assistant; a != nil {
		fmt.Fprintf(&b, "assistant: %d tasks; success %s\n", len(a.Tasks), pct(a.TaskSuccess))
	}
	fmt.Fprintf(&b, "tokens %s (prompt / completion); stage time %s\n", tokens(rep.Totals.PromptTokens, rep.Totals.CompletionTokens),
		ms(&rep.Totals.StageDurationMS))
	return b.String()
}

// Markdown renders a report for people (report.md).
func Markdown(rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# devpilot eval — %s\n\n", rep.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(&b, "Model **%s** (%s). Parts: %s. Written %s.\n\n", cmpOr(rep.Model, "n/a"), cmpOr(rep.Provider, "n/a"),
		strings.Join(rep.Parts, ", "), rep.WrittenAt.Format(time.RFC3339))
	b.WriteString("## Summary\n\n```\n" + Summary(rep) + "```\n\n| metric | value |\n|---|---|\n")
	names := make([]string, 0, len(rep.Summary))
	for n := range rep.Summary {
		if !strings.HasPrefix(n, "case.") && !strings.HasPrefix(n, "assistant.task.") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %s |\n", n, num(rep.Summary[n]))
	}
	for _, c := range rep.Cases {
		m := c.Metrics
		fmt.Fprintf(&b, "\n## %s — %s (%s)\n\n", c.ID, c.Title, c.Status)
		if c.Error != "" {
			fmt.Fprintf(&b, "Error: %s\n\n", c.Error)
		}
		fmt.Fprintf(&b, "Requirement coverage %s · facts in PRD %s, stories %s, PRPs %s · grounding %s (%d checked) · cross-PRP conflicts %s · first-try valid %s · repair turns %s · findings left %d\n\n",
			pct(m.RequirementCoverage), pct(m.FactCoverage.PRD), pct(m.FactCoverage.Stories), pct(m.FactCoverage.PRPs),
			pct(m.Grounding.Share), m.Grounding.Checked, intOr(m.CrossPRPConflicts), pct(m.FirstTryValid), intOr(m.RepairTurns), m.FindingsLeft)
		b.WriteString("| stage | status | time | tokens (prompt / completion) | first-try valid | repair turns | findings left | judge | prompt version | model |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range c.Stages {
			judge := "—"
			if s.Judge != nil {
				judge = num(s.Judge.Mean)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", s.Stage, s.Status, ms(s.DurationMS),
				tokens(s.PromptTokens, s.CompletionTokens), pct(s.FirstTryValid), intOr(s.RepairTurns), s.FindingsLeft, judge,
				cmpOr(s.PromptVersion, "n/a"), cmpOr(s.Model, "n/a"))
		}
		for _, l := range []struct {
			title string
			items []string
		}{{"Facts the PRPs miss", m.FactCoverage.MissingInPRPs}, {"Not grounded", m.Grounding.Misses}, {"Cross-PRP conflicts", m.Conflicts}} {
			if len(l.items) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n%s:\n\n", l.title)
			for _, x := range l.items {
				fmt.Fprintf(&b, "- %s\n", x)
			}
		}
	}
	if c := rep.Content; c != nil {
		b.WriteString("\n## Content\n\n| brief | status | words | brand-check findings | banned words | time |\n|---|---|---|---|---|---|\n")
		for _, d := range c.Drafts {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", d.Brief, d.Status, d.Words, strings.Join(d.Checks, "; "),
				strings.Join(d.BannedWords, ", "), ms(d.DurationMS))
		}
	}
	if a := rep.Assistant; a != nil {
		b.WriteString("\n## Assistant\n\n| task | success | right tool | valid arguments | approval for every write | no invented id | problems |\n|---|---|---|---|---|---|---|\n")
		for _, t := range a.Tasks {
			fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %v | %s |\n", t.ID, t.Success, t.RightTool, t.ValidArgs, t.Approvals, t.NoInvented,
				strings.Join(t.Problems, "; "))
		}
	}
	return b.String()
}
