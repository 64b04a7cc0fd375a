package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// flakyWorker works echoArgs: job 1 succeeds, job 2 fails on its first
// attempt and then succeeds, and any other job fails every attempt. Retries
// are due at once.
type flakyWorker struct {
	river.WorkerDefaults[echoArgs]
}

func (flakyWorker) Work(_ context.Context, job *river.Job[echoArgs]) error {
	if job.Args.N == 1 || job.Args.N == 2 && job.Attempt > 1 {
		return nil
	}
	return errors.New("flaky failure")
}

func (flakyWorker) NextRetry(*river.Job[echoArgs]) time.Time { return time.Now() }

// sample is one series of a metric as gathered.
type sample struct {
	value      float64 // a counter's or gauge's
	count      uint64  // a histogram's
	sum        float64 // a histogram's
	seriesSeen bool
}

// metric returns the series of the metric name with labels in reg; its
// seriesSeen is false when there is none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) sample {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return sample{value: m.GetCounter().GetValue() + m.GetGauge().GetValue(),
				count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum(), seriesSeen: true}
		}
	}
	return sample{}
}

// value returns the value of the counter or gauge name with labels in reg;
// it fails the test when there is no such series.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	m := metric(t, reg, name, labels)
	if !m.seriesSeen {
		t.Fatalf("no %s%v", name, labels)
	}
	return m.value
}

// depthOf returns devpilot_job_queue_depth of kind.
func depthOf(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	return value(t, reg, "devpilot_job_queue_depth", map[string]string{"kind": kind})
}

// The queues of one process share a registry: jobs inserted by either are
// counted, and the working one measures each attempt by kind and outcome;
// the depth is read from the database.
func TestMetrics(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		migrated(t, db)
		reg := prometheus.NewRegistry()
		kinds := []string{echoArgs{}.Kind()}
		workers := river.NewWorkers()
		river.AddWorker(workers, flakyWorker{})
		working := newQueue(t, db, queue.Config{Workers: workers, Metrics: reg, Kinds: kinds})
		inserting := newQueue(t, db, queue.Config{Metrics: reg, Kinds: kinds})

		echo, other := map[string]string{"kind": echoArgs{}.Kind()}, map[string]string{"kind": queue.OtherKind}
		if err := inserting.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 1}, echoArgs{N: 2}}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := db.WithinTx(ctx, func(ctx context.Context) error {
			return working.Enqueue(ctx, echoArgs{N: 3}, ports.EnqueueOptions{MaxAttempts: 2})
		}); err != nil {
			t.Fatal(err)
		}
		// A duplicate skipped is not counted.
		if err := inserting.Enqueue(ctx, unknownArgs{}, ports.EnqueueOptions{RunAt: time.Now().Add(time.Hour), UniqueByArgs: true}); err != nil {
			t.Fatal(err)
		}
		if err := inserting.Enqueue(ctx, unknownArgs{}, ports.EnqueueOptions{RunAt: time.Now().Add(time.Hour), UniqueByArgs: true}); err != nil {
			t.Fatal(err)
		}
		if got := value(t, reg, "devpilot_jobs_queued_total", echo); got != 3 {
			t.Errorf("devpilot_jobs_queued_total%v = %v, want 3", echo, got)
		}
		if got := value(t, reg, "devpilot_jobs_queued_total", other); got != 1 {
			t.Errorf("devpilot_jobs_queued_total%v = %v, want 1", other, got)
		}
		if d := depthOf(t, reg, echoArgs{}.Kind()); d != 3 {
			t.Errorf("depth of %s before working = %v, want 3", echoArgs{}.Kind(), d)
		}
		if d := depthOf(t, reg, queue.OtherKind); d != 1 {
			t.Errorf("depth of other kinds = %v, want 1", d)
		}

		events, unsubscribe := working.Client().Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
		defer unsubscribe()
		startQueue(t, ctx, working)
		finished := map[int]rivertype.JobState{}
		timeout := time.After(waitFor)
		for len(finished) < 3 {
			select {
			case ev := <-events:
				if ev.Job.State == rivertype.JobStateCompleted || ev.Job.State == rivertype.JobStateDiscarded {
					finished[argsOf(t, ev.Job).N] = ev.Job.State
				}
			case <-timeout:
				t.Fatalf("jobs finished after %s: %v, want 1, 2 and 3", waitFor, finished)
			}
		}

		for _, c := range []struct {
			outcome string
			count   uint64
		}{{queue.OutcomeOK, 2}, {queue.OutcomeError, 2}, {queue.OutcomeDiscarded, 1}} {
			labels := map[string]string{"kind": echoArgs{}.Kind(), "outcome": c.outcome}
			m := metric(t, reg, "devpilot_job_run_seconds", labels)
			if m.count != c.count || m.sum <= 0 {
				t.Errorf("devpilot_job_run_seconds%v = %v, want %d attempts taking some time", labels, m, c.count)
			}
		}
		if m := metric(t, reg, "devpilot_job_wait_seconds", echo); m.count != 5 || m.sum <= 0 {
			t.Errorf("devpilot_job_wait_seconds%v = %v, want 5 attempts having waited", echo, m)
		}
		for name, want := range map[string]float64{"devpilot_job_failures_total": 3, "devpilot_job_retries_total": 2} {
			if got := value(t, reg, name, echo); got != want {
				t.Errorf("%s%v = %v, want %v", name, echo, got, want)
			}
		}
		if d := depthOf(t, reg, echoArgs{}.Kind()); d != 0 {
			t.Errorf("depth of %s after working = %v, want 0", echoArgs{}.Kind(), d)
		}
		if d := depthOf(t, reg, queue.OtherKind); d != 1 {
			t.Errorf("depth of other kinds after working = %v, want 1", d)
		}
		if n, err := testutil.GatherAndCount(reg, "devpilot_job_queue_depth"); err != nil || n != 2 {
			t.Errorf("devpilot_job_queue_depth series: %d, %v; want 2 (the known kind and other)", n, err)
		}
	})
}

// When the database cannot answer, the depth collector exports nothing and
// logs, and the other metrics are still gathered.
func TestMetricsDepthError(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	newQueue(t, db, queue.Config{Metrics: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// No migrations: river_job does not exist.
	if n, err := testutil.GatherAndCount(reg, "devpilot_job_queue_depth"); err != nil || n != 0 {
		t.Errorf("devpilot_job_queue_depth series without river_job: %d, %v; want 0", n, err)
	}
	if !strings.Contains(logs.String(), "job queue depth") {
		t.Errorf("logs %q, want the failed read", logs.String())
	}
}
