package github

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/adapters/telemetry"
)

// operation names a Client method's GitHub requests in the metrics: a
// fixed name per method, never a URL, so the label stays bounded.
type operation string

// The operations of a Client.
const (
	opExchange      operation = "exchange"
	opUser          operation = "user"
	opListRepos     operation = "list_repos"
	opListCommits   operation = "list_commits"
	opListPulls     operation = "list_pulls"
	opSearchCommits operation = "search_commits"
	opListActivity  operation = "list_activity"
	opReadTree      operation = "read_tree"
	opReadFile      operation = "read_file"
	opCreateIssue   operation = "create_issue"
	opUpdateIssue   operation = "update_issue"
	opListIssues    operation = "list_issues"
	opListLabels    operation = "list_labels"
	opCreateLabel   operation = "create_label"
	opWriteFile     operation = "write_file"
)

// callMetrics are the series of GitHub requests; nil measures nothing.
type callMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newCallMetrics(reg prometheus.Registerer) *callMetrics {
	if reg == nil {
		return nil
	}
	return &callMetrics{
		calls: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_github_calls_total",
			Help: "GitHub API requests, by operation (the adapter method: list_commits, read_file, ...) and outcome (ok, canceled or the error's kind: rate_limited, timeout, not_found, unavailable, upstream, ...).",
		}, []string{"operation", "outcome"})),
		duration: telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_github_call_duration_seconds",
			Help:    "Time a GitHub API request took, by operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"})),
	}
}

// observe counts one request of op that took elapsed and ended with err
// (already mapped to a ports.Error).
func (m *callMetrics) observe(op operation, elapsed time.Duration, err error) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(string(op), telemetry.Outcome(err)).Inc()
	m.duration.WithLabelValues(string(op)).Observe(elapsed.Seconds())
}
