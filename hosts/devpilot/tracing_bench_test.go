package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/testkit/fakeotlp"
)

// The shape of the tracing benchmark: tracingRounds rounds, each running
// tracingChats chats, tracingConcurrent at a time, on every configuration
// in turn, so that a slower spell of the machine falls on all of them.
const (
	tracingRounds     = 3
	tracingChats      = 120
	tracingConcurrent = 8
	tracingTokens     = 20
)

// BenchmarkTracingOverhead measures what tracing costs: the devpilot
// process's CPU time per chat (a request, a model call streamed over
// tracingTokens chunks, the session's writes) with tracing off and on (every
// span exported over OTLP/HTTP to testkit/fakeotlp), and, when `make bench`
// supplies the previous commit's binary (DEVPILOT_BENCH_BASE_BIN), that
// binary's: off should cost what the code without tracing costs. On each
// database; each configuration is its own `devpilot run` process, and the
// rounds alternate between them.
func BenchmarkTracingOverhead(b *testing.B) {
	type config struct {
		name string
		bin  string
		env  []string
	}
	collector := fakeotlp.New(b)
	// One user runs every chat: no request rate or turn cap in the way.
	limits := []string{"DEVPILOT_RATE_LIMIT_REQUESTS=0", "DEVPILOT_MAX_TURNS_PER_USER=0"}
	var configs []config
	for _, bin := range benchBinaries(b) {
		if bin.name == "base" {
			configs = append(configs, config{name: "base", bin: bin.path, env: limits})
			continue
		}
		configs = append(configs,
			config{name: "off", bin: bin.path, env: limits},
			config{name: "on", bin: bin.path, env: append(slices.Clip(limits), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+collector.TracesURL())})
	}
	answer := fakeopenai.TextChunks(slices.Repeat([]string{" tok"}, tracingTokens)...)
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			model := fakeopenai.New(b)
			procs := make([]*devpilotProc, len(configs))
			for i, c := range configs {
				procs[i] = startDevpilot(b, c.bin, model.URL(), d, c.env...)
			}
			client := benchClient(tracingConcurrent)
			run := func(p *devpilotProc) error {
				ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
				defer cancel()
				work := make(chan struct{}, tracingChats)
				for range tracingChats {
					work <- struct{}{}
				}
				close(work)
				var wg sync.WaitGroup
				var mu sync.Mutex
				var firstErr error
				for range tracingConcurrent {
					wg.Go(func() {
						for range work {
							model.Enqueue(answer)
							r, err := p.chat(ctx, client, "tell me a short story")
							if err == nil && r.contents != tracingTokens {
								err = fmt.Errorf("%d content events, want %d", r.contents, tracingTokens)
							}
							if err != nil {
								mu.Lock()
								firstErr = cmpErr(firstErr, err)
								mu.Unlock()
								return
							}
						}
					})
				}
				wg.Wait()
				return firstErr
			}
			for _, p := range procs { // warm-up: connections, caches, the JIT of nothing
				if err := run(p); err != nil {
					b.Fatal(err)
				}
			}
			cpu := make([]float64, len(configs))
			wall := make([]time.Duration, len(configs))
			for b.Loop() {
				for range tracingRounds {
					for i, p := range procs {
						cpu0, start := cpuSeconds(b, p.pid()), time.Now()
						if err := run(p); err != nil {
							b.Fatalf("%s: %v", configs[i].name, err)
						}
						wall[i] += time.Since(start)
						cpu[i] += cpuSeconds(b, p.pid()) - cpu0
					}
				}
			}
			chats := float64(b.N * tracingRounds * tracingChats)
			perChat := map[string]float64{}
			for i, c := range configs {
				perChat[c.name] = cpu[i] / chats * 1e3
				b.ReportMetric(perChat[c.name], "cpu-ms/chat-"+c.name)
				b.ReportMetric(chats/wall[i].Seconds(), "chats/s-"+c.name)
			}
			b.ReportMetric(perChat["on"]/perChat["off"], "on/off")
			if base, ok := perChat["base"]; ok {
				b.ReportMetric(perChat["off"]/base, "off/base")
			}
			b.ReportMetric(0, "ns/op")
			for _, p := range procs {
				p.stop()
			}
			if len(collector.Spans()) == 0 {
				b.Fatal("tracing on exported no spans")
			}
		})
	}
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
