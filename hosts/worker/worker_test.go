package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestMain(m *testing.M) { sqlstoretest.Main(m) }

const waitFor = 30 * time.Second

var now = fixture.Epoch

func at(d time.Duration) *time.Time {
	t := now.Add(d)
	return &t
}

const day = 24 * time.Hour

func TestPruneTokensJob(t *testing.T) {
	t.Parallel()
	tokens := []struct {
		name               string
		expiresAt, revoked *time.Time
		kept               bool
	}{
		{"expired 31 days ago", at(-31 * day), nil, false},
		{"revoked 40 days ago", nil, at(-40 * day), false},
		{"expired yesterday", at(-day), nil, true},
		{"live", at(day), nil, true},
		{"never expires", nil, nil, true},
	}
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		store := sqlstore.NewIdentity(db)
		ids := &fixture.IDs{}

		org := ports.Org{ID: ids.NewID(), Name: "acme", CreatedAt: now.Add(-90 * day)}
		user := ports.User{ID: ids.NewID(), OrgID: org.ID, Email: "ada@example.com", Role: ports.RoleAdmin, CreatedAt: org.CreatedAt}
		if err := store.CreateOrg(ctx, org); err != nil {
			t.Fatal(err)
		}
		if err := store.CreateUser(ctx, user); err != nil {
			t.Fatal(err)
		}
		tokenIDs := make([]string, len(tokens))
		for i, tok := range tokens {
			hash := sha256.Sum256([]byte(tok.name))
			tokenIDs[i] = ids.NewID()
			rec := ports.APIToken{
				ID: tokenIDs[i], UserID: user.ID, OrgID: org.ID, Name: tok.name, Prefix: "dp_test",
				Hash: hash[:], CreatedAt: now.Add(-60 * day), ExpiresAt: tok.expiresAt, RevokedAt: tok.revoked,
			}
			if err := store.CreateToken(ctx, rec); err != nil {
				t.Fatalf("seeding %s: %v", tok.name, err)
			}
		}

		svc := identity.New(identity.Deps{Orgs: store, Users: store, Tokens: store, Tx: db, Clock: fixture.NewClock(), IDs: ids})
		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: svc, Assistant: fakeExpirer{}, Spec: fakeGenerator{}, SCM: fakeProcessor{}, Content: fakeContent{}, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}})
		if err != nil {
			t.Fatal(err)
		}
		q, events := startWorkingQueue(t, db, queue.Config{Workers: workers})

		if err := q.Enqueue(ctx, identity.PruneTokensArgs{}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForJob(t, events, identity.PruneTokensArgs{}.Kind())

		for i, tok := range tokens {
			_, err := store.GetToken(ctx, tokenIDs[i])
			switch {
			case tok.kept && err != nil:
				t.Errorf("%s: %v, want it kept", tok.name, err)
			case !tok.kept && !errors.Is(err, ports.ErrNotFound):
				t.Errorf("%s: GetToken = %v, want not_found (pruned)", tok.name, err)
			}
		}
	})
}

// waitForJob waits for the completion of a job of the kind, failing the test
// when one fails or none completes in time.
// startWorkingQueue migrates the queue's tables on db, starts a queue that
// works jobs as cfg says, and returns it with the events of its jobs'
// completions and failures; it is stopped when the test ends.
func startWorkingQueue(t *testing.T, db *sqlstore.DB, cfg queue.Config) (*queue.Queue, <-chan *river.Event) {
	t.Helper()
	if err := queue.Migrate(t.Context(), db, nil); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := q.Client().Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	t.Cleanup(unsubscribe)
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := q.Stop(stopCtx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return q, events
}

func waitForJob(t *testing.T, events <-chan *river.Event, kind string) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("River client stopped")
			}
			if ev.Job.Kind != kind {
				continue
			}
			if ev.Kind != river.EventKindJobCompleted {
				t.Fatalf("job %s: %s: %v", kind, ev.Kind, ev.Job.Errors)
			}
			return
		case <-timeout:
			t.Fatalf("no %s job completed within %s", kind, waitFor)
		}
	}
}

type fakeProcessor struct{}

func (fakeProcessor) ProcessDelivery(context.Context, string) error { return nil }

func (fakeProcessor) ProcessDeliveries(context.Context, []string) error { return nil }

type fakeContent struct{ final *bool }

// RunPublication makes fakeContent a worker.ContentPublishing too.
func (f fakeContent) RunPublication(_ context.Context, _ content.PublishContentArgs, final bool) error {
	if f.final != nil {
		*f.final = final
	}
	return nil
}

func (f fakeContent) RunGeneration(_ context.Context, _ content.GenerateContentArgs, final bool) error {
	if f.final != nil {
		*f.final = final
	}
	return nil
}

func (fakeContent) AbandonGeneration(context.Context, content.GenerateContentArgs) error { return nil }

// The content worker tells the core which attempt is the last.
func TestGenerateContentWorkerFinal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		attempt, max int
		want         bool
	}{{1, 5, false}, {4, 5, false}, {5, 5, true}} {
		var final bool
		w := &worker.GenerateContentWorker{Content: fakeContent{final: &final}}
		job := &river.Job[content.GenerateContentArgs]{JobRow: &rivertype.JobRow{Attempt: tt.attempt, MaxAttempts: tt.max}}
		if err := w.Work(t.Context(), job); err != nil {
			t.Fatal(err)
		}
		if final != tt.want {
			t.Errorf("attempt %d of %d: final = %v, want %v", tt.attempt, tt.max, final, tt.want)
		}
	}
}

// The last run of a publish job, or one taken up after its last run was
// interrupted, is final.
func TestPublishContentWorkerFinal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		attempt, max int
		want         bool
	}{{1, 3, false}, {2, 3, false}, {3, 3, true}, {4, 3, true}} {
		var final bool
		w := &worker.PublishContentWorker{Content: fakeContent{final: &final}}
		job := &river.Job[content.PublishContentArgs]{JobRow: &rivertype.JobRow{Attempt: tt.attempt, MaxAttempts: tt.max}}
		if err := w.Work(t.Context(), job); err != nil {
			t.Fatal(err)
		}
		if final != tt.want {
			t.Errorf("attempt %d of %d: final = %v, want %v", tt.attempt, tt.max, final, tt.want)
		}
	}
}

type fakeGenerator struct{}

func (fakeGenerator) RunGeneration(context.Context, spec.GenerateStageArgs, bool) error { return nil }

func (fakeGenerator) AbandonGeneration(context.Context, spec.GenerateStageArgs) error { return nil }

type fakeIdempotencyPruner struct{}

func (fakeIdempotencyPruner) PruneIdempotency(context.Context, time.Time, int) (int, error) {
	return 0, nil
}

type fakeExpirer struct{}

func (fakeExpirer) ExpireConfirmations(context.Context) (int, error) { return 0, nil }
func (fakeExpirer) FailLostTurns(context.Context) (int, error)       { return 0, nil }

type fakePruner struct {
	n   int
	err error
}

func (f fakePruner) PruneTokens(context.Context) (int, error) { return f.n, f.err }

func TestSweepWorker(t *testing.T) {
	t.Parallel()
	errDB := ports.Wrap(ports.KindUnavailable, errors.New("connection refused"), "database unavailable")
	tests := []struct {
		name    string
		pruner  fakePruner
		wantErr error
		wantLog string
	}{
		{"deleted some", fakePruner{n: 3}, nil, `level=INFO msg="pruned API tokens" count=3`},
		{"nothing to delete, at debug", fakePruner{}, nil, `level=DEBUG msg="pruned API tokens" count=0`},
		{"store fails", fakePruner{err: errDB}, ports.ErrUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			w := &worker.SweepWorker[identity.PruneTokensArgs]{Sweep: tt.pruner.PruneTokens, Did: "pruned API tokens", Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			job := &river.Job[identity.PruneTokensArgs]{JobRow: &rivertype.JobRow{ID: 42}}
			err := w.Work(t.Context(), job)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Work = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Fatalf("log %q does not contain %q", logs.String(), tt.wantLog)
			}
		})
	}
}

func TestNewWorkers(t *testing.T) {
	t.Parallel()
	if _, err := worker.NewWorkers(worker.Deps{}); err == nil {
		t.Fatal("NewWorkers without Identity succeeded")
	}
	if _, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{}, SCM: fakeProcessor{}, Content: fakeContent{}, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}}); err != nil {
		t.Fatalf("NewWorkers: %v", err)
	}
}

// kindArgs is a job of the kind it names, with no arguments.
type kindArgs struct{ kind string }

func (k kindArgs) Kind() string { return k.kind }

// Every kind Kinds names has a worker: a queue with the workers accepts it
// and rejects a kind without one.
func TestKinds(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	ctx := t.Context()
	if err := queue.Migrate(ctx, db, nil); err != nil {
		t.Fatal(err)
	}
	workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{}, SCM: fakeProcessor{}, Content: fakeContent{}, Publishing: fakeContent{}, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(db, queue.Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	errRollback := errors.New("rollback")
	for _, kind := range append(worker.Kinds(), "worker_test.none") {
		err := db.WithinTx(ctx, func(ctx context.Context) error {
			if err := q.Enqueue(ctx, kindArgs{kind}, ports.EnqueueOptions{}); err != nil {
				return err
			}
			return errRollback
		})
		if accepted := errors.Is(err, errRollback); accepted != (kind != "worker_test.none") {
			t.Errorf("enqueueing %s: %v", kind, err)
		}
	}
}

// The periodic jobs are accepted by a queue with the workers, and prune
// tokens once when the queue starts.
func TestPeriodicJobsRunOnStart(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		pruned := make(chan struct{}, 1)
		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: signalPruner(pruned), Assistant: fakeExpirer{}, Spec: fakeGenerator{}, SCM: fakeProcessor{}, Content: fakeContent{}, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}})
		if err != nil {
			t.Fatal(err)
		}
		_, events := startWorkingQueue(t, db, queue.Config{Workers: workers, PeriodicJobs: worker.PeriodicJobs()})
		waitForJob(t, events, identity.PruneTokensArgs{}.Kind())
		select {
		case <-pruned:
		default:
			t.Fatal("job completed without pruning")
		}
	})
}

type signalPruner chan struct{}

func (s signalPruner) PruneTokens(context.Context) (int, error) {
	select {
	case s <- struct{}{}:
	default:
	}
	return 0, nil
}

type recordingGenerator struct {
	final     []bool
	abandoned int
}

func (g *recordingGenerator) RunGeneration(_ context.Context, _ spec.GenerateStageArgs, final bool) error {
	g.final = append(g.final, final)
	return nil
}

func (g *recordingGenerator) AbandonGeneration(context.Context, spec.GenerateStageArgs) error {
	g.abandoned++
	return nil
}

func TestGenerateStageWorkerTellsTheLastAttempt(t *testing.T) {
	t.Parallel()
	g := &recordingGenerator{}
	w := &worker.GenerateStageWorker{Spec: g}
	for attempt := 1; attempt <= 3; attempt++ {
		job := &river.Job[spec.GenerateStageArgs]{JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: 3}}
		if err := w.Work(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	if want := []bool{false, false, true}; !slices.Equal(g.final, want) {
		t.Fatalf("final = %v, want %v", g.final, want)
	}
}

// fakeMeter meters a call with err, after waiting for ctx when wait is set.
type fakeMeter struct {
	err  error
	wait bool
}

func (f fakeMeter) MeterCall(ctx context.Context, _ voice.MeterCallArgs) error {
	if f.wait {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.err
}

// The metering worker snoozes a call that outlasts its attempt, retries a
// failure and gives up an invalid one.
func TestMeterCallWorker(t *testing.T) {
	t.Parallel()
	job := &river.Job[voice.MeterCallArgs]{JobRow: &rivertype.JobRow{ID: 7, Attempt: 1, MaxAttempts: 10}, Args: voice.MeterCallArgs{CallID: "rtc_1"}}
	dropped := &ports.Error{Kind: ports.KindUnavailable, Message: "dropped"}
	bad := ports.Invalid("no org")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	w := &worker.MeterCallWorker{Voice: fakeMeter{wait: true}, Logger: slog.New(slog.DiscardHandler)}
	var snooze *river.JobSnoozeError
	if err := w.Work(ctx, job); !errors.As(err, &snooze) || snooze.Duration != 0 {
		t.Errorf("an attempt that ran out of time: %v, want JobSnooze(0)", err)
	}
	w.Voice = fakeMeter{}
	if err := w.Work(t.Context(), job); err != nil {
		t.Errorf("a call that ended: %v", err)
	}
	w.Voice = fakeMeter{err: dropped}
	if err := w.Work(t.Context(), job); !errors.Is(err, dropped) {
		t.Errorf("a dropped sideband: %v, want it retried", err)
	}
	if next := w.NextRetry(job); time.Until(next) > 30*time.Second {
		t.Errorf("retried at %v, want within seconds", next)
	}
	w.Voice = fakeMeter{err: bad}
	var cancelled *rivertype.JobCancelError
	if err := w.Work(t.Context(), job); !errors.As(err, &cancelled) {
		t.Errorf("an invalid record: %v, want JobCancel", err)
	}
}

// fakeUsageKeyPruner prunes nothing.
type fakeUsageKeyPruner struct{}

func (fakeUsageKeyPruner) PruneUsageKeys(context.Context, time.Time, int) (int, error) { return 0, nil }
