package sqlstore_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// TestRecordDeliveriesAcrossStatements fails the last statement of a batch
// too big for one: none of the batch is stored. PostgreSQL refuses a time
// past its range (text no longer fails: it is cleaned); SQLite stores it,
// and offers no portable way to fail one row.
func TestRecordDeliveriesAcrossStatements(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		if db.Dialect != sqlstore.DialectPostgres {
			t.Skip("SQLite stores any time")
		}
		scm := sqlstore.NewSCM(db)
		prefix := fmt.Sprintf("across-%d-", time.Now().UnixNano())
		ds := make([]ports.WebhookDelivery, 5000)
		for i := range ds {
			ds[i] = ports.WebhookDelivery{ID: fmt.Sprintf("%s%05d", prefix, i), Event: "push", Payload: []byte("{}"), ReceivedAt: time.Now()}
		}
		ds[len(ds)-1].ReceivedAt = time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC) // sorted last, so in the last statement
		if stored, err := scm.RecordDeliveries(t.Context(), ds); err == nil || stored != nil {
			t.Fatalf("RecordDeliveries with a time PostgreSQL cannot hold = %v, %v; want an error", stored, err)
		}
		for _, d := range []ports.WebhookDelivery{ds[0], ds[4000]} {
			if _, err := scm.GetDelivery(t.Context(), d.ID); !errors.Is(err, ports.ErrNotFound) {
				t.Errorf("GetDelivery(%s) after the failed batch: %v, want not_found", d.ID, err)
			}
		}
	})
}

// BenchmarkRecordDelivery records webhook deliveries of a typical push
// payload's size from parallel callers, as the webhook endpoint does.
func BenchmarkRecordDelivery(b *testing.B) {
	payload := make([]byte, 8<<10)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			scm := sqlstore.NewSCM(sqlstoretest.Open(b, d))
			prefix := fmt.Sprintf("%d-", time.Now().UnixNano())
			var n atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := prefix + fmt.Sprint(n.Add(1))
					ok, err := scm.RecordDelivery(b.Context(), ports.WebhookDelivery{
						ID: id, Event: "push", Payload: payload, ReceivedAt: time.Now(),
					})
					if err != nil || !ok {
						b.Errorf("RecordDelivery(%s) = %v, %v", id, ok, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
