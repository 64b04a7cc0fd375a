package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/fakegithub"
)

// The shape of a webhook benchmark run.
const (
	webhookWorkers    = 32               // concurrent senders, each on its own keep-alive connection
	webhookPerRun     = 10_000           // deliveries per timed run
	webhookWarmup     = 500              // deliveries before timing: connections, caches, pools
	webhookRunLimit   = 55 * time.Second // a run stops early past this
	webhookBenchToken = "whsec-bench"
)

// benchPushPayload is a realistic push body of about 6.5 KB: a push of three
// commits, each touching a few files, on a repository of an organisation.
func benchPushPayload() []byte {
	repo := fakegithub.HookRepo{ID: 812_345_678, Owner: fakegithub.HookUser{Login: "acme", ID: 4_200_001, Organization: true}, Name: "checkout-service"}
	sender := fakegithub.HookUser{Login: "octo-dev", ID: 5_300_007}
	var commits []fakegithub.HookCommit
	for i := range 3 {
		commits = append(commits, fakegithub.HookCommit{
			Message:     fmt.Sprintf("checkout: retry idempotent payment captures (%d/3)\n\nThe payment provider times out under load; retry with the same key.", i+1),
			AuthorName:  "Octo Dev",
			AuthorEmail: "5300007+octo-dev@users.noreply.github.com",
			AuthorLogin: "octo-dev",
			Timestamp:   fakegithub.DefaultEpoch.Add(time.Duration(i) * time.Minute),
			Added:       []string{fmt.Sprintf("internal/payments/retry_%d.go", i)},
			Modified:    []string{"internal/payments/capture.go", "internal/payments/capture_test.go", "go.mod", "go.sum"},
		})
	}
	return fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: repo, Sender: sender, Commits: commits}).Body
}

// BenchmarkWebhookIngest measures signed push deliveries per second that
// POST /webhooks/scm accepts (signature verified, delivery stored durably
// and its processing job enqueued in one transaction, 202 answered), sent
// by webhookWorkers concurrent loopback clients to `devpilot run`
// in-process, on each database; and the p50 and p99 latency of a delivery
// as the client sees it. `run` also runs the worker, which processes the
// deliveries into activity concurrently with the ingest, as in production:
// processed/s is how fast it keeps up, the deliveries of the timed runs
// over the time from the first one sent to the last one processed, and
// backlog-at-end how many were still waiting when the last was accepted.
// Every delivery has a fresh X-GitHub-Delivery id and the same ~6.5 KB body
// and signature.
func BenchmarkWebhookIngest(b *testing.B) {
	body := benchPushPayload()
	signature := fakegithub.Sign([]byte(webhookBenchToken), body)
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			dbURL := sqlstoretest.URL(b, d)
			h := harness{t: b, env: map[string]string{
				"DEVPILOT_DATABASE_URL": dbURL,
				"DEVPILOT_DATA_DIR":     b.TempDir(),
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				"GITHUB_WEBHOOK_SECRET": webhookBenchToken,
			}}
			base, _, stop := h.start()
			defer stop()
			db, err := sqlstore.Open(b.Context(), dbURL)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			pending := func() int {
				var n int
				if err := db.Reader.GetContext(b.Context(), &n, "SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'"); err != nil {
					b.Fatal(err)
				}
				return n
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * webhookWorkers, MaxIdleConnsPerHost: 2 * webhookWorkers}}
			defer client.CloseIdleConnections()
			post := func(ctx context.Context) (time.Duration, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/scm", bytes.NewReader(body))
				if err != nil {
					return 0, err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("User-Agent", fakegithub.HookshotUserAgent)
				req.Header.Set(fakegithub.HeaderEvent, "push")
				req.Header.Set(fakegithub.HeaderDelivery, uuid.NewString())
				req.Header.Set(fakegithub.HeaderSignature, signature)
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != http.StatusAccepted || !bytes.Contains(answer, []byte(`"status":"accepted"`)) {
					return 0, fmt.Errorf("status %d: %s", resp.StatusCode, answer)
				}
				return took, nil
			}
			// send posts n deliveries from webhookWorkers senders and
			// returns the latencies and the wall time.
			send := func(n int) ([]time.Duration, time.Duration) {
				ctx, cancel := context.WithTimeout(b.Context(), webhookRunLimit)
				defer cancel()
				var next atomic.Int64
				lat := make([][]time.Duration, webhookWorkers)
				var wg sync.WaitGroup
				var once sync.Once
				var firstErr error
				start := time.Now()
				for w := range webhookWorkers {
					wg.Go(func() {
						for next.Add(1) <= int64(n) && ctx.Err() == nil {
							d, err := post(ctx)
							if err != nil {
								if ctx.Err() == nil { // not the run's time limit
									once.Do(func() { firstErr = err })
									cancel()
								}
								return
							}
							lat[w] = append(lat[w], d)
						}
					})
				}
				wg.Wait()
				wall := time.Since(start)
				if firstErr != nil {
					b.Fatalf("delivery failed: %v", firstErr)
				}
				var all []time.Duration
				for _, l := range lat {
					all = append(all, l...)
				}
				if len(all) < n {
					b.Logf("stopped after %d of %d deliveries at the %s limit", len(all), n, webhookRunLimit)
				}
				return all, wall
			}
			send(webhookWarmup)
			if !waitFor(func() bool { return pending() == 0 }, time.Minute) {
				b.Fatalf("%d warm-up deliveries not processed within a minute", pending())
			}

			var all []time.Duration
			var wall, drain time.Duration
			var backlog int
			for b.Loop() {
				start := time.Now()
				l, w := send(webhookPerRun)
				all = append(all, l...)
				wall += w
				backlog += pending()
				if !waitFor(func() bool { return pending() == 0 }, 5*time.Minute) {
					b.Fatalf("%d deliveries not processed within 5 minutes", pending())
				}
				drain += time.Since(start)
			}
			b.ReportMetric(float64(len(all))/wall.Seconds(), "deliveries/s")
			b.ReportMetric(float64(len(all))/drain.Seconds(), "processed/s")
			b.ReportMetric(float64(backlog)/float64(b.N), "backlog-at-end")
			b.ReportMetric(ms(percentile(all, 50)), "ms-p50")
			b.ReportMetric(ms(percentile(all, 99)), "ms-p99")
			b.ReportMetric(0, "ns/op")
		})
	}
}
