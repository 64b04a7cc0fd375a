package memstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.RetentionStore = (*Store)(nil)

// pruneMap deletes (s.mu held), undoably, at most limit entries of m that
// old reports past their retention, and returns how many it deleted.
func pruneMap[K comparable, V any](ctx context.Context, s *Store, m map[K]V, limit int, old func(K, V) bool) int {
	n := 0
	for k, v := range m {
		if n == limit {
			break
		}
		if old(k, v) {
			del(ctx, s, m, k)
			n++
		}
	}
	return n
}

// prune checks limit, locks s and runs pruneMap.
func prune[K comparable, V any](ctx context.Context, s *Store, m func() map[K]V, limit int, old func(K, V) bool) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	defer s.lock()()
	return pruneMap(ctx, s, m(), limit, old), nil
}

// PruneWebhookDeliveries deletes at most limit deliveries processed before
// processedBefore; pending ones are kept.
func (s *Store) PruneWebhookDeliveries(ctx context.Context, processedBefore time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.WebhookDelivery { return s.scm.deliveries }, limit,
		func(_ string, d ports.WebhookDelivery) bool {
			return d.Status != ports.DeliveryPending && d.ProcessedAt != nil && d.ProcessedAt.Before(processedBefore)
		})
}

// PruneWebhookDigests deletes at most limit digests recorded before
// recordedBefore.
func (s *Store) PruneWebhookDigests(ctx context.Context, recordedBefore time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.WebhookDigest { return s.scm.digests }, limit,
		func(_ string, d ports.WebhookDigest) bool { return d.At.Before(recordedBefore) })
}

// PruneStreamEvents deletes at most limit events of turns ended before
// endedBefore, keeping each session's last event and the events of the
// sessions with a pending confirmation.
func (s *Store) PruneStreamEvents(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	defer s.lock()()
	last := map[string]int64{}
	for k := range s.assistant.events {
		last[k.session] = max(last[k.session], k.seq)
	}
	pending := map[string]bool{}
	for _, c := range s.assistant.confirmations {
		if c.v.Status == ports.ConfirmationPending {
			pending[c.v.SessionID] = true
		}
	}
	return pruneMap(ctx, s, s.assistant.events, limit, func(k eventKey, e ports.StreamEvent) bool {
		t, ok := s.assistant.turns[e.TurnID]
		return ok && t.EndedAt != nil && t.EndedAt.Before(endedBefore) && e.CreatedAt.Before(endedBefore) &&
			k.seq < last[k.session] && !pending[k.session]
	}), nil
}

// PruneInvitations deletes at most limit invitations never accepted that
// expired before expiredBefore.
func (s *Store) PruneInvitations(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.Invitation { return s.invitations }, limit,
		func(_ string, inv ports.Invitation) bool {
			return inv.AcceptedAt == nil && inv.ExpiresAt.Before(expiredBefore)
		})
}

// PruneOAuthStates deletes at most limit OAuth states that expired before
// expiredBefore.
func (s *Store) PruneOAuthStates(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.OAuthState { return s.scm.states }, limit,
		func(_ string, st ports.OAuthState) bool { return st.ExpiresAt.Before(expiredBefore) })
}

// PruneRateWindows deletes at most limit rate counts whose window started
// before startedBefore. The counts are kept outside transactions, and so
// is their deletion.
func (s *Store) PruneRateWindows(_ context.Context, startedBefore time.Time, limit int) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	defer s.lock()()
	n := 0
	for k, w := range s.rates {
		if n == limit {
			break
		}
		if w.start.UnixMilli() < startedBefore.UnixMilli() {
			delete(s.rates, k)
			n++
		}
	}
	return n, nil
}

// PruneCostCache deletes at most limit cached reports that expired before
// expiredBefore.
func (s *Store) PruneCostCache(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[costKey]cachedCost { return s.cloud.costs }, limit,
		func(_ costKey, c cachedCost) bool { return c.expiresAt.Before(expiredBefore) })
}

// PruneSCMActivity deletes at most limit activity entries that happened
// before before.
func (s *Store) PruneSCMActivity(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.SCMActivity { return s.scm.activity }, limit,
		func(_ string, a ports.SCMActivity) bool { return a.At.Before(before) })
}

// PruneAuditLog deletes at most limit audit entries recorded before before.
func (s *Store) PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error) {
	return prune(ctx, s, func() map[string]ports.AuditEntry { return s.cloud.audit }, limit,
		func(_ string, e ports.AuditEntry) bool { return e.At.Before(before) })
}
