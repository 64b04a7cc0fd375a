package eval

import (
	"bytes"
	"strings"
	"testing"
)

func summaryReport(m map[string]float64) Report {
	s := map[string]*float64{}
	for k, v := range m {
		s[k] = ptr(v)
	}
	return Report{Version: reportVersion, Summary: s}
}

func TestCompareIsDirectionAware(t *testing.T) {
	t.Parallel()
	base := map[string]float64{
		"spec.fact_coverage.prps": 0.9, "spec.grounding": 1, "spec.cross_prp_conflicts": 0, "spec.findings_left": 10,
		"spec.repair_turns": 2, "assistant.task_success": 1, "tokens.prompt": 1000, "time.stages_ms": 500, "spec.judge_mean": 4,
	}
	tests := []struct {
		name    string
		change  map[string]float64
		regress []string
	}{
		{"same", nil, nil},
		{"better everywhere", map[string]float64{"spec.fact_coverage.prps": 1, "spec.findings_left": 3, "spec.repair_turns": 0}, nil},
		{"coverage down past the threshold", map[string]float64{"spec.fact_coverage.prps": 0.8}, []string{"spec.fact_coverage.prps"}},
		{"coverage down within the threshold", map[string]float64{"spec.fact_coverage.prps": 0.86}, nil},
		{"a conflict appears", map[string]float64{"spec.cross_prp_conflicts": 1}, []string{"spec.cross_prp_conflicts"}},
		{"findings up by 10%", map[string]float64{"spec.findings_left": 11}, []string{"spec.findings_left"}},
		{"findings up by 4%", map[string]float64{"spec.findings_left": 10.4}, nil},
		{"repairs up", map[string]float64{"spec.repair_turns": 3}, []string{"spec.repair_turns"}},
		{"tokens and time never regress", map[string]float64{"tokens.prompt": 99999, "time.stages_ms": 99999}, nil},
		{"judge down", map[string]float64{"spec.judge_mean": 3}, []string{"spec.judge_mean"}},
	}
	for _, tt := range tests {
		b := map[string]float64{}
		for k, v := range base {
			b[k] = v
		}
		for k, v := range tt.change {
			b[k] = v
		}
		var got []string
		for _, c := range Compare(summaryReport(base), summaryReport(b), 0.05) {
			if c.Regression {
				got = append(got, c.Metric)
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.regress, ",") {
			t.Errorf("%s: regressions %v, want %v", tt.name, got, tt.regress)
		}
	}
}

func TestCompareShowsMetricsOnlyOneRunHas(t *testing.T) {
	t.Parallel()
	a := summaryReport(map[string]float64{"spec.grounding": 1})
	b := summaryReport(map[string]float64{"spec.fact_coverage.prps": 0.2})
	b.Summary["spec.grounding"] = nil
	changes := Compare(a, b, 0.05)
	var out bytes.Buffer
	if n := PrintComparison(&out, changes, 0.05); n != 0 || len(changes) != 2 {
		t.Errorf("%d regressions in %d changes:\n%s", n, len(changes), out.String())
	}
	if !strings.Contains(out.String(), "n/a") {
		t.Errorf("a metric only one run has is not shown as n/a:\n%s", out.String())
	}
}

func TestMarkdownListsWhatIsMissing(t *testing.T) {
	t.Parallel()
	conflicts := 1
	rep := Report{Parts: []string{PartSpec}, Cases: []CaseReport{{ID: "c1", Title: "T", Status: "done",
		Stages: []StageReport{{Stage: "prps", Status: "ready", PromptVersion: "abc123", Model: "m"}},
		Metrics: CaseMetrics{FactCoverage: FactCoverages{MissingInPRPs: []string{"F2"}}, Grounding: Grounding{Misses: []string{"PRP-1 references x.go"}},
			CrossPRPConflicts: &conflicts, Conflicts: []string{"PRP-1 and PRP-2 both create a.go"}}}}}
	rep.Summary = summarize(rep)
	md := Markdown(rep)
	for _, want := range []string{"## c1 — T (done)", "Facts the PRPs miss:\n\n- F2\n", "Not grounded:\n\n- PRP-1 references x.go\n",
		"Cross-PRP conflicts:\n\n- PRP-1 and PRP-2 both create a.go\n", "| prps | ready |", "| abc123 | m |", "| spec.cross_prp_conflicts | 1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
