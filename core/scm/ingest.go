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
func newIngest(maxBatch, writers int, write groupcommit.WriteFunc[ports.WebhookDelivery, bool]) *groupcommit.Committer[ports.WebhookDelivery, bool] {
	return groupcommit.New(groupcommit.Config{
		MaxItems: maxBatch, MaxWeight: webhookBatchBytes, Writers: writers, Timeout: webhookWriteTimeout,
	}, func(d ports.WebhookDelivery) int { return len(d.Payload) }, write)
}

// storeDeliveries records ds and enqueues the processing of those stored,
// in one transaction.
func (s *Service) storeDeliveries(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
	var stored []bool
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if stored, err = s.d.Store.RecordDeliveries(ctx, ds); err != nil {
			return err
		}
		if len(stored) != len(ds) {
			return ports.Errorf(ports.KindInternal, "recording %d webhook deliveries: %d results", len(ds), len(stored))
		}
		jobs := make([]ports.JobArgs, 0, len(ds))
		for i, d := range ds {
			if stored[i] {
				jobs = append(jobs, ProcessDeliveryArgs{DeliveryID: d.ID})
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return s.d.Jobs.EnqueueMany(ctx, jobs, ports.EnqueueOptions{})
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}
