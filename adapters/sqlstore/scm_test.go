package sqlstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestSCM(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		scm, ids := sqlstore.NewSCM(db), sqlstore.NewIdentity(db)
		storetest.TestSCM(t, func(*testing.T) storetest.SCMStores {
			return storetest.SCMStores{
				SCM: scm, Tx: db,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}
		})
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
