package worker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// Drain takes batches until one is short, and stops when ctx ends between
// two.
func TestDrain(t *testing.T) {
	t.Parallel()
	left := 7
	var limits []int
	prune := func(_ context.Context, limit int) (int, error) {
		limits = append(limits, limit)
		n := min(left, limit)
		left -= n
		return n, nil
	}
	if n, err := worker.Drain(t.Context(), 3, time.Millisecond, prune); n != 7 || err != nil {
		t.Fatalf("Drain = %d, %v; want 7, nil", n, err)
	}
	if !slices.Equal(limits, []int{3, 3, 3}) {
		t.Errorf("batches of %v, want three of 3 (the last short)", limits)
	}
	ctx, cancel := context.WithCancel(t.Context())
	full := func(context.Context, int) (int, error) { cancel(); return 3, nil }
	if n, err := worker.Drain(ctx, 3, time.Hour, full); n != 3 || !errors.Is(err, context.Canceled) {
		t.Errorf("Drain with ctx ended = %d, %v; want 3, context.Canceled", n, err)
	}
	errDB := errors.New("database down")
	failing := func(context.Context, int) (int, error) { return 0, errDB }
	if _, err := worker.Drain(t.Context(), 3, time.Millisecond, failing); !errors.Is(err, errDB) {
		t.Errorf("Drain of a failing prune: %v, want its error", err)
	}
}

// Every retention sweep is a kind the queue knows and a periodic job that
// runs when the queue starts; they delete what is past its retention, in
// batches, and keep what is still in use or off.
func TestRetentionJobsRunOnStart(t *testing.T) {
	t.Parallel()
	retentionKinds := []string{
		worker.PruneWebhookDeliveriesArgs{}.Kind(), worker.PruneWebhookDigestsArgs{}.Kind(),
		worker.PruneStreamEventsArgs{}.Kind(), worker.PruneInvitationsArgs{}.Kind(),
		worker.PruneOAuthStatesArgs{}.Kind(), worker.PruneRateWindowsArgs{}.Kind(),
		worker.PruneCostCacheArgs{}.Kind(), worker.PruneSCMActivityArgs{}.Kind(),
		worker.PruneAuditLogArgs{}.Kind(), worker.PruneIdempotencyArgs{}.Kind(),
		worker.PruneUsageKeysArgs{}.Kind(),
	}
	for _, kind := range retentionKinds {
		if !slices.Contains(worker.Kinds(), kind) {
			t.Errorf("Kinds lacks %s", kind)
		}
	}
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		clock := fixture.NewClock()
		old := clock.Now().Add(-30 * day)
		ids, scmStore, chat, cloud := sqlstore.NewIdentity(db), sqlstore.NewSCM(db), sqlstore.NewAssistant(db), sqlstore.NewCloud(db)
		org := ports.Org{ID: newTestID(), Name: "acme", CreatedAt: old}
		user := ports.User{ID: newTestID(), OrgID: org.ID, Email: "ada@example.com", Role: ports.RoleAdmin, CreatedAt: old}
		must(t, ids.CreateOrg(ctx, org))
		must(t, ids.CreateUser(ctx, user))

		// Five deliveries processed a month ago (more than a batch of 2),
		// one still pending.
		var processed []string
		for range 5 {
			d := ports.WebhookDelivery{ID: newTestID(), Event: "push", Payload: []byte("{}"), Status: ports.DeliveryPending, ReceivedAt: old}
			if _, err := scmStore.RecordDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			must(t, scmStore.FinishDelivery(ctx, d.ID, ports.DeliveryProcessed, "", old))
			processed = append(processed, d.ID)
		}
		pending := ports.WebhookDelivery{ID: newTestID(), Event: "push", Payload: []byte("{}"), Status: ports.DeliveryPending, ReceivedAt: old}
		if _, err := scmStore.RecordDelivery(ctx, pending); err != nil {
			t.Fatal(err)
		}
		// A session whose turn ended a month ago, and one whose turn runs.
		session := func(ended bool) string {
			cs := ports.ChatSession{ID: newTestID(), OrgID: org.ID, UserID: user.ID, CreatedAt: old, UpdatedAt: old}
			must(t, chat.CreateSession(ctx, cs))
			turn := ports.Turn{ID: newTestID(), SessionID: cs.ID, StartedAt: old}
			must(t, chat.StartTurn(ctx, turn, time.Time{}, 0))
			for seq := range int64(4) {
				must(t, chat.AppendEvents(ctx, ports.StreamEvent{SessionID: cs.ID, Seq: seq + 1, TurnID: turn.ID, Name: "content", CreatedAt: old}))
			}
			if ended {
				must(t, chat.EndTurn(ctx, turn.ID, old))
			}
			return cs.ID
		}
		finished, running := session(true), session(false)
		// An audit entry of a month ago: the audit log's retention is off by default.
		must(t, cloud.RecordAudit(ctx, ports.AuditEntry{ID: newTestID(), OrgID: org.ID, UserID: user.ID, AccountID: "a",
			Action: "ecs.scale", Resource: "r", Outcome: ports.AuditOK, At: old}))

		workers, err := worker.NewWorkers(worker.Deps{Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{},
			SCM: fakeProcessor{}, Content: fakeContent{}, Voice: fakeMeter{}, Idempotency: sqlstore.NewIdempotency(db),
			UsageKeys: sqlstore.NewUsage(db), Retention: sqlstore.NewRetention(db), Clock: clock, RetentionBatch: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, events := startWorkingQueue(t, db, queue.Config{Workers: workers, PeriodicJobs: worker.PeriodicJobs()})
		waitForJobs(t, events, retentionKinds)

		for _, id := range processed {
			if _, err := scmStore.GetDelivery(ctx, id); !errors.Is(err, ports.ErrNotFound) {
				t.Errorf("a delivery processed a month ago: %v, want it deleted", err)
			}
		}
		if _, err := scmStore.GetDelivery(ctx, pending.ID); err != nil {
			t.Errorf("the pending delivery: %v, want it kept", err)
		}
		for _, tc := range []struct {
			what    string
			session string
			want    int
		}{{"a finished turn's session", finished, 1}, {"a running turn's session", running, 4}} {
			evs, err := chat.ListEvents(ctx, tc.session, 0, 100)
			if err != nil || len(evs) != tc.want {
				t.Errorf("%s keeps %d events (%v), want %d", tc.what, len(evs), err, tc.want)
			}
		}
		if entries, _, err := cloud.ListAudit(ctx, org.ID, "", ports.Page{}); err != nil || len(entries) != 1 {
			t.Errorf("audit log: %d entries, %v; want the one kept", len(entries), err)
		}
	})
}

// waitForJobs waits until a job of each kind has completed.
func waitForJobs(t *testing.T, events <-chan *river.Event, kinds []string) {
	t.Helper()
	left := slices.Clone(kinds)
	timeout := time.After(waitFor)
	for len(left) > 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("River client stopped")
			}
			i := slices.Index(left, ev.Job.Kind)
			if i < 0 {
				continue
			}
			if ev.Kind != river.EventKindJobCompleted {
				t.Fatalf("job %s: %s: %v", ev.Job.Kind, ev.Kind, ev.Job.Errors)
			}
			left = slices.Delete(left, i, i+1)
		case <-timeout:
			t.Fatalf("no job of %v completed within %s", left, waitFor)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var testIDs = &fixture.IDs{}

func newTestID() string { return testIDs.NewID() }
