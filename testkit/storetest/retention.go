package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// retentionStores are the retention store under test and the stores that
// write the records it deletes, over the same data.
type retentionStores struct {
	Retention     ports.RetentionStore
	SCM           ports.SCMStore
	Sessions      ports.ChatSessionStore
	Confirmations ports.ConfirmationStore
	Events        ports.StreamEventStore
	Turns         ports.TurnStore
	Invitations   ports.InvitationStore
	Rates         ports.RateStore
	Accounts      ports.CloudAccountStore
	Costs         ports.CostCacheStore
	Audit         ports.AuditStore
	Identity      identityStores
}

// TestRetention runs the contract of ports.RetentionStore: each table
// shrinks past its horizon, a batch of at most the limit at a time (the
// subtests store more records than one batch), and what is still in use is
// kept. newStores is called by every subtest (subtests run in parallel) and
// may return stores over a shared database, which no other suite uses at
// the same time: each subtest owns one table, and its counts are exact.
// The records due are dated in the 1990s, far before any other suite's.
func TestRetention(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.retention, needRetention), []suiteCase[retentionStores]{
		{"WebhookDeliveries", testRetentionDeliveries},
		{"WebhookDigests", testRetentionDigests},
		{"StreamEvents", testRetentionStreamEvents},
		{"Invitations", testRetentionInvitations},
		{"OAuthStates", testRetentionOAuthStates},
		{"RateWindows", testRetentionRateWindows},
		{"CostCache", testRetentionCostCache},
		{"SCMActivity", testRetentionSCMActivity},
		{"AuditLog", testRetentionAuditLog},
	})
}

// horizon is the time before which the retention subtests' records go; old
// is before it, recent after it.
var (
	horizon = time.Date(1996, 3, 4, 5, 6, 7, 0, time.UTC)
	old     = horizon.Add(-30 * 24 * time.Hour)
	recent  = horizon.Add(time.Hour)
)

// retentionBatch is the limit the subtests prune with: fewer than the
// records due.
const retentionBatch = 3

// drainPrune calls prune with retentionBatch until a batch deletes fewer,
// checking that limit 0 is refused, that no batch deletes more than its
// limit and that the first is full; it returns how many it deleted in all.
func drainPrune(t *testing.T, what string, prune func(limit int) (int, error)) int {
	t.Helper()
	if _, err := prune(0); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("%s with limit 0: %v, want invalid", what, err)
	}
	total := 0
	for batch := 0; ; batch++ {
		n, err := prune(retentionBatch)
		switch {
		case err != nil:
			t.Fatalf("%s batch %d: %v", what, batch, err)
		case n > retentionBatch:
			t.Fatalf("%s batch %d deleted %d, more than its limit %d", what, batch, n, retentionBatch)
		case batch == 0 && n != retentionBatch:
			t.Errorf("%s batch 0 deleted %d, want a full batch of %d", what, n, retentionBatch)
		case batch > 100:
			t.Fatalf("%s never deletes a short batch", what)
		}
		if total += n; n < retentionBatch {
			return total
		}
	}
}

func testRetentionDeliveries(t *testing.T, s retentionStores) {
	ctx := t.Context()
	record := func(received time.Time, status string, processed time.Time) string {
		t.Helper()
		d := ports.WebhookDelivery{ID: newID(), Event: "push", Payload: []byte(`{"ref":"refs/heads/main"}`),
			Status: ports.DeliveryPending, ReceivedAt: received}
		if ok, err := s.SCM.RecordDelivery(ctx, d); err != nil || !ok {
			t.Fatalf("RecordDelivery = %v, %v", ok, err)
		}
		if status != ports.DeliveryPending {
			if err := s.SCM.FinishDelivery(ctx, d.ID, status, "", processed); err != nil {
				t.Fatalf("FinishDelivery: %v", err)
			}
		}
		return d.ID
	}
	var due, kept []string
	for i, status := range []string{ports.DeliveryProcessed, ports.DeliveryIgnored, ports.DeliveryFailed} {
		for j := range 3 {
			due = append(due, record(old, status, old.Add(time.Duration(i*3+j)*time.Minute)))
		}
	}
	kept = append(kept,
		record(old.Add(-time.Hour), ports.DeliveryPending, time.Time{}), // never processed, however old
		record(old, ports.DeliveryProcessed, recent),                    // processed after the horizon
	)
	if n := drainPrune(t, "PruneWebhookDeliveries", func(limit int) (int, error) {
		return s.Retention.PruneWebhookDeliveries(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneWebhookDeliveries deleted %d, want %d", n, len(due))
	}
	for _, id := range due {
		if _, err := s.SCM.GetDelivery(ctx, id); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("GetDelivery of a pruned delivery: %v, want not_found", err)
		}
	}
	for _, id := range kept {
		if _, err := s.SCM.GetDelivery(ctx, id); err != nil {
			t.Errorf("GetDelivery of a kept delivery: %v", err)
		}
	}
}

func testRetentionDigests(t *testing.T, s retentionStores) {
	ctx := t.Context()
	claim := func(at time.Time) ports.WebhookDigest {
		t.Helper()
		d := ports.WebhookDigest{Digest: digestOf(newID()), DeliveryID: newID(), At: at}
		if claimed, err := s.SCM.ClaimWebhookDigests(ctx, []ports.WebhookDigest{d}, at.Add(-time.Hour)); err != nil || !claimed[0] {
			t.Fatalf("ClaimWebhookDigests = %v, %v", claimed, err)
		}
		return d
	}
	var due []ports.WebhookDigest
	for i := range 7 {
		due = append(due, claim(old.Add(time.Duration(i)*time.Second)))
	}
	kept := claim(recent)
	if n := drainPrune(t, "PruneWebhookDigests", func(limit int) (int, error) {
		return s.Retention.PruneWebhookDigests(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneWebhookDigests deleted %d, want %d", n, len(due))
	}
	// A digest still stored stops a claim since long ago; a pruned one not.
	for _, d := range append(due, kept) {
		d2 := ports.WebhookDigest{Digest: d.Digest, DeliveryID: newID(), At: recent.Add(time.Minute)}
		claimed, err := s.SCM.ClaimWebhookDigests(ctx, []ports.WebhookDigest{d2}, old.Add(-time.Hour))
		if err != nil {
			t.Fatalf("ClaimWebhookDigests: %v", err)
		}
		if wantKept := d == kept; claimed[0] == wantKept {
			t.Errorf("digest recorded at %v: kept = %v, want %v", d.At, !claimed[0], wantKept)
		}
	}
}

func testRetentionStreamEvents(t *testing.T, s retentionStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	// session stores a session with a turn started at old, ended at ended
	// (nil: running), and n events of it.
	session := func(ended *time.Time, n int) ports.ChatSession {
		t.Helper()
		cs := newSession(owner)
		cs.CreatedAt, cs.UpdatedAt = old, old
		if err := s.Sessions.CreateSession(ctx, cs); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		turn := newTurn(cs.ID, old)
		if err := s.Turns.StartTurn(ctx, turn, time.Time{}, 0); err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		events := make([]ports.StreamEvent, n)
		for i := range events {
			events[i] = ports.StreamEvent{SessionID: cs.ID, Seq: int64(i + 1), TurnID: turn.ID, Name: "content",
				Data: json.RawMessage(fmt.Sprintf(`{"delta":"part %d"}`, i)), CreatedAt: old.Add(time.Duration(i) * time.Millisecond)}
		}
		if err := s.Events.AppendEvents(ctx, events...); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		if ended != nil {
			if err := s.Turns.EndTurn(ctx, turn.ID, *ended); err != nil {
				t.Fatalf("EndTurn: %v", err)
			}
		}
		return cs
	}
	finished := session(ptr(old.Add(time.Minute)), 8)             // all but the last event go
	running := session(nil, 5)                                    // a turn still running (resumable)
	resumable := session(ptr(recent), 5)                          // ended within the resume window
	awaiting := session(ptr(old.Add(time.Minute)), 4)             // with a pending confirmation
	decided := session(ptr(old.Add(time.Minute)), retentionBatch) // a confirmation decided: goes
	for _, cs := range []ports.ChatSession{awaiting, decided} {
		c := newConfirmation(cs)
		c.CreatedAt, c.ExpiresAt = old, old.Add(15*time.Minute)
		if cs.ID == awaiting.ID {
			c.ExpiresAt = recent.Add(time.Hour) // still waiting for a human
		}
		if err := s.Confirmations.CreateConfirmation(ctx, c); err != nil {
			t.Fatalf("CreateConfirmation: %v", err)
		}
		if cs.ID == decided.ID {
			if _, err := s.Confirmations.ExpireConfirmations(ctx, old.Add(time.Hour)); err != nil {
				t.Fatalf("ExpireConfirmations: %v", err)
			}
		}
	}
	if n := drainPrune(t, "PruneStreamEvents", func(limit int) (int, error) {
		return s.Retention.PruneStreamEvents(ctx, horizon, limit)
	}); n != 7+retentionBatch-1 {
		t.Errorf("PruneStreamEvents deleted %d, want %d", n, 7+retentionBatch-1)
	}
	for _, tc := range []struct {
		what      string
		cs        ports.ChatSession
		firstKept int64
		last      int64
	}{
		{"a finished turn's session", finished, 8, 8},
		{"a running turn's session", running, 1, 5},
		{"a session whose turn ended within the window", resumable, 1, 5},
		{"a session with a pending confirmation", awaiting, 1, 4},
		{"a session whose confirmation expired", decided, retentionBatch, retentionBatch},
	} {
		events, err := s.Events.ListEvents(ctx, tc.cs.ID, 0, 100)
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		if want := int(tc.last - tc.firstKept + 1); len(events) != want || events[0].Seq != tc.firstKept {
			t.Errorf("%s keeps %d events from %v, want %d from seq %d", tc.what, len(events), events, want, tc.firstKept)
		}
		// The next turn counts on from the last event.
		if seq, err := s.Events.LastEventSeq(ctx, tc.cs.ID); err != nil || seq != tc.last {
			t.Errorf("%s: LastEventSeq = %d, %v; want %d", tc.what, seq, err, tc.last)
		}
	}
}

func testRetentionInvitations(t *testing.T, s retentionStores) {
	ctx := t.Context()
	inviter := seedOwner(t, s.Identity)
	invite := func(expires time.Time) ports.Invitation {
		t.Helper()
		inv := newInvitation(inviter.OrgID, inviter.UserID)
		inv.CreatedAt, inv.ExpiresAt = expires.Add(-7*24*time.Hour), expires
		if err := s.Invitations.CreateInvitation(ctx, inv); err != nil {
			t.Fatalf("CreateInvitation: %v", err)
		}
		return inv
	}
	var due []ports.Invitation
	for i := range 5 {
		due = append(due, invite(old.Add(time.Duration(i)*time.Hour)))
	}
	revoked := invite(old)
	if err := s.Invitations.RevokeInvitation(ctx, inviter.OrgID, revoked.ID, old.Add(-time.Hour)); err != nil {
		t.Fatalf("RevokeInvitation: %v", err)
	}
	due = append(due, revoked)
	accepted := invite(old)
	member := mustCreateUser(t, s.Identity, newUser(inviter.OrgID))
	if _, err := s.Invitations.AcceptInvitation(ctx, accepted.Hash, old.Add(-time.Hour), member.ID); err != nil {
		t.Fatalf("AcceptInvitation: %v", err)
	}
	unexpired := invite(recent)
	if n := drainPrune(t, "PruneInvitations", func(limit int) (int, error) {
		return s.Retention.PruneInvitations(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneInvitations deleted %d, want %d", n, len(due))
	}
	for _, inv := range due {
		if _, err := s.Invitations.GetInvitationByHash(ctx, inv.Hash); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("GetInvitationByHash of a pruned invitation: %v, want not_found", err)
		}
	}
	for _, inv := range []ports.Invitation{accepted, unexpired} {
		if _, err := s.Invitations.GetInvitationByHash(ctx, inv.Hash); err != nil {
			t.Errorf("GetInvitationByHash of a kept invitation: %v", err)
		}
	}
}

func testRetentionOAuthStates(t *testing.T, s retentionStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	state := func(expires time.Time) ports.OAuthState {
		t.Helper()
		st := newOAuthState(owner)
		st.CreatedAt, st.ExpiresAt = expires.Add(-10*time.Minute), expires
		if err := s.SCM.CreateOAuthState(ctx, st); err != nil {
			t.Fatalf("CreateOAuthState: %v", err)
		}
		return st
	}
	var due []ports.OAuthState
	for i := range 4 {
		due = append(due, state(old.Add(time.Duration(i)*time.Minute)))
	}
	kept := state(recent)
	if n := drainPrune(t, "PruneOAuthStates", func(limit int) (int, error) {
		return s.Retention.PruneOAuthStates(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneOAuthStates deleted %d, want %d", n, len(due))
	}
	for _, st := range due {
		if _, err := s.SCM.ConsumeOAuthState(ctx, st.State, old); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("ConsumeOAuthState of a pruned state: %v, want not_found", err)
		}
	}
	if _, err := s.SCM.ConsumeOAuthState(ctx, kept.State, old); err != nil {
		t.Errorf("ConsumeOAuthState of a kept state: %v", err)
	}
}

func testRetentionRateWindows(t *testing.T, s retentionStores) {
	ctx := t.Context()
	const window = time.Minute
	take := func(key string, at time.Time) bool {
		t.Helper()
		ok, _, err := s.Rates.TakeRate(ctx, key, window, 1, at)
		if err != nil {
			t.Fatalf("TakeRate: %v", err)
		}
		return ok
	}
	var due []string
	for i := range 4 {
		key := "retention:" + newID()
		take(key, old.Add(time.Duration(i)*window))
		due = append(due, key)
	}
	kept := "retention:" + newID()
	take(kept, recent)
	if n := drainPrune(t, "PruneRateWindows", func(limit int) (int, error) {
		return s.Retention.PruneRateWindows(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneRateWindows deleted %d, want %d", n, len(due))
	}
	// A pruned count starts again; a kept one still refuses in its window.
	for i, key := range due {
		if !take(key, old.Add(time.Duration(i)*window)) {
			t.Errorf("a take of a pruned key in its old window was refused, want its count started again")
		}
	}
	if take(kept, recent) {
		t.Errorf("a second take of a kept key in its window was allowed, want its count kept")
	}
}

func testRetentionCostCache(t *testing.T, s retentionStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	account := newCloudAccount(org.ID)
	if err := s.Accounts.CreateCloudAccount(ctx, account); err != nil {
		t.Fatalf("CreateCloudAccount: %v", err)
	}
	put := func(key string, expires time.Time) {
		t.Helper()
		if err := s.Costs.PutCachedCost(ctx, account.ID, key, newCostReport(1), expires); err != nil {
			t.Fatalf("PutCachedCost: %v", err)
		}
	}
	var due []string
	for i := range 5 {
		key := fmt.Sprintf("due-%d", i)
		put(key, old.Add(time.Duration(i)*time.Minute))
		due = append(due, key)
	}
	put("kept", recent)
	if n := drainPrune(t, "PruneCostCache", func(limit int) (int, error) {
		return s.Retention.PruneCostCache(ctx, horizon, limit)
	}); n != len(due) {
		t.Errorf("PruneCostCache deleted %d, want %d", n, len(due))
	}
	for _, key := range append(due, "kept") {
		_, found, err := s.Costs.GetCachedCost(ctx, account.ID, key, old.Add(-time.Hour))
		if err != nil {
			t.Fatalf("GetCachedCost: %v", err)
		}
		if found != (key == "kept") {
			t.Errorf("cached cost %s: found = %v, want %v", key, found, key == "kept")
		}
	}
}

func testRetentionSCMActivity(t *testing.T, s retentionStores) {
	ctx := t.Context()
	repo := newProviderID()
	var entries []ports.SCMActivity
	for i := range 7 {
		entries = append(entries, newActivity(repo, old.Add(time.Duration(i)*time.Minute)))
	}
	kept := newActivity(repo, recent)
	if err := s.SCM.AppendActivity(ctx, append(entries, kept)...); err != nil {
		t.Fatalf("AppendActivity: %v", err)
	}
	if n := drainPrune(t, "PruneSCMActivity", func(limit int) (int, error) {
		return s.Retention.PruneSCMActivity(ctx, horizon, limit)
	}); n != len(entries) {
		t.Errorf("PruneSCMActivity deleted %d, want %d", n, len(entries))
	}
	got, _, err := s.SCM.ListActivity(ctx, repo, ports.Page{Limit: 100})
	if err != nil {
		t.Fatalf("ListActivity: %v", err)
	}
	if len(got) != 1 || got[0].ID != kept.ID {
		t.Errorf("activity left: %+v, want only %s", got, kept.ID)
	}
}

func testRetentionAuditLog(t *testing.T, s retentionStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	for i := range 4 {
		if err := s.Audit.RecordAudit(ctx, newAuditEntry(org.ID, "acct", old.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatalf("RecordAudit: %v", err)
		}
	}
	kept := newAuditEntry(org.ID, "acct", recent)
	if err := s.Audit.RecordAudit(ctx, kept); err != nil {
		t.Fatalf("RecordAudit: %v", err)
	}
	if n := drainPrune(t, "PruneAuditLog", func(limit int) (int, error) {
		return s.Retention.PruneAuditLog(ctx, horizon, limit)
	}); n != 4 {
		t.Errorf("PruneAuditLog deleted %d, want 4", n)
	}
	got, _, err := s.Audit.ListAudit(ctx, org.ID, "", ports.Page{Limit: 100})
	if err != nil {
		t.Fatalf("ListAudit: %v", err)
	}
	if len(got) != 1 || got[0].ID != kept.ID {
		t.Errorf("audit entries left: %+v, want only %s", got, kept.ID)
	}
}
