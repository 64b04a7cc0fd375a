package scm

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/core/internal/groupcommit"
	"github.com/devpilot/devpilot/ports"
)

// The defaults of the webhook group commit (see Config).
const (
	DefaultWebhookBatch   = 128
	DefaultWebhookWriters = 2
	// webhookBatchBytes closes a batch once its payloads reach it, so a
	// batch stays a modest statement; one delivery alone may exceed it.
	webhookBatchBytes = 8 << 20
	// webhookWriteTimeout bounds the write of a batch, which runs detached
	// from its members' contexts.
	webhookWriteTimeout = 30 * time.Second
)

// newIngest returns the group commit of webhook deliveries: concurrent
// ReceiveWebhook calls share one transaction (see package groupcommit). A
// member whose request ends before the batch is written may have its
// delivery stored all the same: the provider's retry is then answered as a
// duplicate, which is what the provider needs.
func newIngest(maxBatch, writers int, write groupcommit.WriteFunc[pendingDelivery, bool]) *groupcommit.Committer[pendingDelivery, bool] {
	return groupcommit.New(groupcommit.Config{
		MaxItems: maxBatch, MaxWeight: webhookBatchBytes, Writers: writers, Timeout: webhookWriteTimeout,
	}, func(d pendingDelivery) int { return len(d.Payload) }, write)
}

// pendingDelivery is a delivery to store, with the digest of its raw body
// ("" for none).
type pendingDelivery struct {
	ports.WebhookDelivery
	digest string
}

// storeDeliveries claims the digests of ds, records those whose digest was
// not seen within Config.ReplayWindow, and enqueues the processing of those
// stored, one job for them all, in one transaction.
func (s *Service) storeDeliveries(ctx context.Context, ds []pendingDelivery) ([]bool, error) {
	stored := make([]bool, len(ds))
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		clear(stored)
		fresh, err := s.claimDigests(ctx, ds)
		if err != nil {
			return err
		}
		var record []ports.WebhookDelivery
		var at []int // index in ds of each of record
		for i, d := range ds {
			if fresh[i] {
				record, at = append(record, d.WebhookDelivery), append(at, i)
			}
		}
		if len(record) == 0 {
			return nil
		}
		recorded, err := s.d.Store.RecordDeliveries(ctx, record)
		if err != nil {
			return err
		}
		if len(recorded) != len(record) {
			return ports.Errorf(ports.KindInternal, "recording %d webhook deliveries: %d results", len(record), len(recorded))
		}
		var ids []string
		for j, ok := range recorded {
			if ok {
				stored[at[j]] = true
				ids = append(ids, record[j].ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		return s.d.Jobs.Enqueue(ctx, ProcessDeliveriesArgs{DeliveryIDs: ids}, ports.EnqueueOptions{})
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// claimDigests reports for each of ds whether it is not a replay: it has no
// digest, or its digest was not recorded within Config.ReplayWindow, and it
// is now.
func (s *Service) claimDigests(ctx context.Context, ds []pendingDelivery) ([]bool, error) {
	fresh := make([]bool, len(ds))
	var digests []ports.WebhookDigest
	var at []int
	for i, d := range ds {
		if d.digest == "" {
			fresh[i] = true
			continue
		}
		digests = append(digests, ports.WebhookDigest{Digest: d.digest, DeliveryID: d.ID, At: d.ReceivedAt})
		at = append(at, i)
	}
	if len(digests) == 0 {
		return fresh, nil
	}
	claimed, err := s.d.Store.ClaimWebhookDigests(ctx, digests, s.d.Clock.Now().Add(-s.cfg.ReplayWindow))
	if err != nil {
		return nil, err
	}
	if len(claimed) != len(digests) {
		return nil, ports.Errorf(ports.KindInternal, "claiming %d webhook digests: %d results", len(digests), len(claimed))
	}
	for j, ok := range claimed {
		fresh[at[j]] = ok
	}
	return fresh, nil
}
