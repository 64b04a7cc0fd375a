package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The assistant benchmarks run the real binary as a separate process (so its
// RSS is its own) against hosts/sandbox/fakeopenai served by the benchmark process,
// and read the chat SSE stream over loopback as a client would. They report
// figures; they assert nothing about time.

// Time to first content (TTFC): through devpilot against straight from the
// fake, both read the same way by an HTTP client, ttfcStreams streams at a
// time, ttfcRounds rounds (burst) or streams per client (steady).
const (
	ttfcStreams = 100
	ttfcRounds  = 5
	// ttfcAlternations is how many times the steady patterns go from
	// devpilot to direct and back, so that a slower spell of the machine
	// falls on both paths rather than on one.
	ttfcAlternations = 3
	ttfcFirstToken   = 100 * time.Millisecond
	ttfcTokenDelay   = 20 * time.Millisecond // 50 tokens/s, as a hosted model
	ttfcTokens       = 25
)

// Relay rate: long answers streamed by the fake without any delay, one token
// per chunk, by relayStreams concurrent chats for about relayWindow.
const (
	relayStreams = 32
	relayTokens  = 2000
	relayWindow  = 10 * time.Second
)

// Idle streams: rssStreams chats whose model has not said anything yet.
const (
	rssStreams    = 2000
	rssFirstToken = 100 * time.Second // longer than the benchmark holds them
)

// BenchmarkAssistantTTFC measures the time from sending a chat to reading its
// first content event, through devpilot (POST /api/v1/agent/chat) and
// straight from the fake (POST /chat/completions, stream:true), with
// ttfcStreams concurrent streams, on each database. The fake waits
// ttfcFirstToken before the first token on both paths, so the difference of
// the medians is what devpilot adds. The direct path sends the very request
// devpilot sends the model (its system prompt and tool definitions, taken
// from the warm-up), so the model's cost of reading a longer prompt is not
// counted as devpilot's. Two arrival patterns:
//
//   - burst: rounds of ttfcStreams streams started at the same instant;
//   - steady: ttfcStreams clients, started evenly over one stream's length,
//     each opening its next stream as soon as the last one ended, so about
//     ttfcStreams streams are always open but they do not all start together;
//   - steady-continue: steady, each chat going on in an existing session
//     (which costs devpilot more reads and writes than a new one); its
//     direct path sends what devpilot sent for a session's second chat.
//
// ms-p50-headers-* is the time to the response headers: for devpilot, the
// work done before the stream starts (authentication, the chat's
// transaction).
func BenchmarkAssistantTTFC(b *testing.B) {
	bin := buildDevpilot(b)
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			model := fakeopenai.New(b)
			p := startDevpilot(b, bin, model.URL(), d)
			client := benchClient(ttfcStreams)
			answer := fakeopenai.TextChunks(slices.Repeat([]string{" word"}, ttfcTokens)...).
				WithFirstTokenDelay(ttfcFirstToken).WithTokenDelay(ttfcTokenDelay)
			check := func(r streamResult, err error) (streamResult, error) {
				if err == nil && r.contents != ttfcTokens {
					err = fmt.Errorf("%d content events, want %d", r.contents, ttfcTokens)
				}
				return r, err
			}
			viaDevpilot := func(ctx context.Context) (streamResult, error) {
				model.Enqueue(answer)
				return check(p.chat(ctx, client, "hello"))
			}
			burst(b, ttfcStreams, time.Minute, viaDevpilot) // warm-up: connections, caches
			sent := model.Requests()
			body := sent[len(sent)-1].Body // what devpilot asks the model
			direct := func(ctx context.Context) (streamResult, error) {
				model.Enqueue(answer)
				return check(completion(ctx, client, model.URL(), body))
			}
			burst(b, ttfcStreams, time.Minute, direct)

			b.Run("burst", func(b *testing.B) {
				var through, straight []streamResult
				for b.Loop() {
					for range ttfcRounds {
						through = append(through, burst(b, ttfcStreams, time.Minute, viaDevpilot)...)
						straight = append(straight, burst(b, ttfcStreams, time.Minute, direct)...)
					}
				}
				reportTTFC(b, through, straight)
				if n := model.Pending(); n != 0 {
					b.Fatalf("%d scripted answers left", n)
				}
			})
			// measureSteady alternates steady arrivals of chats with steady
			// arrivals of direct completions, ttfcAlternations times, taking
			// a fresh pair from paths before each, and reports the
			// difference.
			type pathPair struct {
				chat, direct func(context.Context) (streamResult, error)
			}
			measureSteady := func(b *testing.B, paths func() pathPair) {
				cycle := ttfcFirstToken + ttfcTokens*ttfcTokenDelay
				var through, straight []streamResult
				for b.Loop() {
					for range ttfcAlternations {
						pp := paths()
						through = append(through, steady(b, ttfcStreams, ttfcRounds, cycle, pp.chat)...)
						straight = append(straight, steady(b, ttfcStreams, ttfcRounds, cycle, pp.direct)...)
					}
				}
				reportTTFC(b, through, straight)
				if n := model.Pending(); n != 0 {
					b.Fatalf("%d scripted answers left", n)
				}
			}
			b.Run("steady", func(b *testing.B) {
				measureSteady(b, func() pathPair { return pathPair{viaDevpilot, direct} })
			})
			// steady-continue: as steady, but each chat goes on in a session
			// of earlier chats (one at a time per session), as a
			// conversation does. Each alternation starts from new sessions
			// of two chats, so the chats measured are always a session's
			// third to seventh, and the direct path sends what devpilot sent
			// for the second: the longer history of a longer run would be
			// the fake's cost of reading it, not devpilot's.
			b.Run("steady-continue", func(b *testing.B) {
				measureSteady(b, func() pathPair {
					sessions := make(chan string, ttfcStreams)
					for _, r := range burst(b, ttfcStreams, time.Minute, viaDevpilot) {
						sessions <- r.sessionID
					}
					inSession := func(ctx context.Context) (streamResult, error) {
						id := <-sessions
						defer func() { sessions <- id }()
						model.Enqueue(answer)
						return check(p.chatIn(ctx, client, id, "and then?"))
					}
					burst(b, ttfcStreams, time.Minute, inSession)
					sent := model.Requests()
					body := sent[len(sent)-1].Body
					direct := func(ctx context.Context) (streamResult, error) {
						model.Enqueue(answer)
						return check(completion(ctx, client, model.URL(), body))
					}
					return pathPair{inSession, direct}
				})
			})
			p.stop()
		})
	}
}

func reportTTFC(b *testing.B, through, straight []streamResult) {
	first := func(rs []streamResult) []time.Duration {
		out := make([]time.Duration, len(rs))
		for i, r := range rs {
			out[i] = r.first
		}
		return out
	}
	headers := func(rs []streamResult) []time.Duration {
		out := make([]time.Duration, len(rs))
		for i, r := range rs {
			out[i] = r.headers
		}
		return out
	}
	t, s := first(through), first(straight)
	for _, q := range []int{50, 90, 99} {
		b.ReportMetric(ms(percentile(t, q)), fmt.Sprintf("ms-p%d-ttfc-devpilot", q))
		b.ReportMetric(ms(percentile(s, q)), fmt.Sprintf("ms-p%d-ttfc-direct", q))
	}
	b.ReportMetric(ms(percentile(t, 50)-percentile(s, 50)), "ms-p50-overhead")
	b.ReportMetric(ms(percentile(headers(through), 50)), "ms-p50-headers-devpilot")
	b.ReportMetric(ms(percentile(headers(straight), 50)), "ms-p50-headers-direct")
	b.ReportMetric(float64(len(t)), "streams")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAssistantRelayRate measures how many content events devpilot
// relays per second and per core when the model streams as fast as it can:
// relayStreams chats at a time, each answered with relayTokens chunks of one
// token, for about relayWindow. events/s/core divides by GOMAXPROCS (the
// client and the fake share the machine); events/cpu-s divides by the CPU
// time the devpilot process used.
func BenchmarkAssistantRelayRate(b *testing.B) {
	bin := buildDevpilot(b)
	model := fakeopenai.New(b)
	p := startDevpilot(b, bin, model.URL(), sqlstore.DialectSQLite)
	client := benchClient(relayStreams)
	burst(b, relayStreams, time.Minute, relayChat(model, p, client)) // warm-up

	var events, elapsed, cpu float64
	for b.Loop() {
		r := relay(b, p, relayStreams, relayWindow, relayChat(model, p, client))
		events += r.events
		elapsed += r.elapsed
		cpu += r.cpu
	}
	b.ReportMetric(events/elapsed/float64(runtime.GOMAXPROCS(0)), "events/s/core")
	b.ReportMetric(events/cpu, "events/cpu-s")
	b.ReportMetric(cpu/elapsed, "cores-devpilot")
	b.ReportMetric(0, "ns/op")
	p.stop()
}

// Relay CPU on PostgreSQL: relayCPUStreams chats at a time, streamed as in
// the relay rate benchmark, for relayCPUWindow per measurement, each binary
// measured relayCPUAlternations times.
const (
	relayCPUStreams      = 100
	relayCPUWindow       = 10 * time.Second
	relayCPUAlternations = 2
)

// BenchmarkAssistantRelayCPU measures the CPU time the devpilot process
// spends per relayed token (one model chunk, one content event) on
// PostgreSQL with relayCPUStreams concurrent chats streamed as fast as the
// model can, for the current code and, under `make bench`, the base
// commit's binary: cpu-us-per-token-current, cpu-us-per-token-base and
// ratio-current/base. Each measurement starts the binary on a fresh
// database, warms it up, then relays for relayCPUWindow; the binaries take
// turns (current, base, base, current, ...) so that a slower spell of the
// machine falls on both. CPU time per token, unlike a rate, hardly depends
// on what else the machine runs. It skips without DEVPILOT_TEST_POSTGRES_URL.
func BenchmarkAssistantRelayCPU(b *testing.B) {
	if os.Getenv(sqlstoretest.PostgresURLEnv) == "" {
		b.Skip("needs PostgreSQL: set " + sqlstoretest.PostgresURLEnv)
	}
	bins := benchBinaries(b)
	model := fakeopenai.New(b)
	client := benchClient(relayCPUStreams)
	cpu := map[string]float64{}
	tokens := map[string]float64{}
	measure := func(bin benchBinary) {
		p := startDevpilot(b, bin.path, model.URL(), sqlstore.DialectPostgres)
		chat := relayChat(model, p, client)
		burst(b, relayCPUStreams, 2*time.Minute, chat) // warm-up: connections, caches
		r := relay(b, p, relayCPUStreams, relayCPUWindow, chat)
		p.stop()
		cpu[bin.name] += r.cpu
		tokens[bin.name] += r.events
		b.Logf("%s: %.0f tokens, %.2f cpu-s, %.2f cpu-us/token", bin.name, r.events, r.cpu, r.cpu/r.events*1e6)
	}
	for b.Loop() {
		for i := range relayCPUAlternations {
			order := slices.Clone(bins)
			if i%2 == 1 {
				slices.Reverse(order)
			}
			for _, bin := range order {
				measure(bin)
			}
		}
	}
	perToken := map[string]float64{}
	for _, bin := range bins {
		perToken[bin.name] = cpu[bin.name] / tokens[bin.name] * 1e6
		b.ReportMetric(perToken[bin.name], "cpu-us-per-token-"+bin.name)
	}
	if base, ok := perToken["base"]; ok {
		b.ReportMetric(perToken["current"]/base, "ratio-current/base")
	}
	b.ReportMetric(0, "ns/op")
}

// relayChat is a chat on p whose model at model answers relayTokens chunks
// of one token as fast as it can; it fails unless every chunk came as a
// content event.
func relayChat(model *fakeopenai.Server, p *devpilotProc, client *http.Client) func(context.Context) (streamResult, error) {
	answer := fakeopenai.TextChunks(slices.Repeat([]string{" tok"}, relayTokens)...)
	return func(ctx context.Context) (streamResult, error) {
		model.Enqueue(answer)
		r, err := p.chat(ctx, client, "tell me a long story")
		if err == nil && r.contents != relayTokens {
			err = fmt.Errorf("%d content events, want %d", r.contents, relayTokens)
		}
		return r, err
	}
}

// relayed is what one relay run measured: the content events received, the
// wall time and the CPU time of the devpilot process, in seconds.
type relayed struct {
	events, elapsed, cpu float64
}

// relay runs streams clients, each running chat after chat with do until
// window has passed, and measures p meanwhile. It fails the benchmark if a
// chat fails.
func relay(b *testing.B, p *devpilotProc, streams int, window time.Duration, do func(context.Context) (streamResult, error)) relayed {
	b.Helper()
	cpu0 := cpuSeconds(b, p.pid())
	start := time.Now()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	ctx, cancel := context.WithTimeout(b.Context(), window+time.Minute)
	defer cancel()
	for range streams {
		wg.Go(func() {
			for time.Since(start) < window {
				r, err := do(ctx)
				if err != nil {
					errs <- err
					return
				}
				n.Add(int64(r.contents))
			}
		})
	}
	wg.Wait()
	r := relayed{elapsed: time.Since(start).Seconds(), cpu: cpuSeconds(b, p.pid()) - cpu0, events: float64(n.Load())}
	close(errs)
	for err := range errs {
		b.Fatalf("relay stream: %v", err)
	}
	return r
}

// BenchmarkAssistantIdleStreamRSS opens rssStreams chats whose model waits
// before its first token, and reports how much the devpilot process's RSS
// grew per open, idle stream. The streams are then released (the clients
// hang up) and the process must stop cleanly.
func BenchmarkAssistantIdleStreamRSS(b *testing.B) {
	if os.Getenv(inProcessEnv) == "1" {
		b.Skip("RSS needs devpilot in its own process; unset " + inProcessEnv)
	}
	bin := buildDevpilot(b)
	// OpenAI serves HTTPS with HTTP/2, where streams share connections; a
	// plain HTTP/1.1 server (Ollama, vLLM on loopback) costs a connection,
	// two goroutines and their buffers per stream. Both are measured with
	// HTTP/1.1 clients, one connection per stream (a browser, or a proxy
	// speaking HTTP/1.1 upstream); h2c-client has them speak HTTP/2
	// without TLS, as a proxy multiplexing its upstream connections does.
	httpsModel := func(b *testing.B) (*fakeopenai.Server, *devpilotProc) {
		model := fakeopenai.NewTLS(b)
		certFile := filepath.Join(b.TempDir(), "fake-ca.pem")
		if err := os.WriteFile(certFile, model.CACertPEM(), 0o600); err != nil {
			b.Fatal(err)
		}
		return model, startDevpilot(b, bin, model.URL(), sqlstore.DialectSQLite, "SSL_CERT_FILE="+certFile)
	}
	b.Run("http1", func(b *testing.B) {
		model := fakeopenai.New(b)
		idleStreamRSS(b, model, startDevpilot(b, bin, model.URL(), sqlstore.DialectSQLite), benchClient(rssStreams))
	})
	b.Run("https-h2", func(b *testing.B) {
		model, p := httpsModel(b)
		idleStreamRSS(b, model, p, benchClient(rssStreams))
	})
	b.Run("h2c-client", func(b *testing.B) {
		model, p := httpsModel(b)
		idleStreamRSS(b, model, p, h2cClient())
	})
}

// idleStreamRSS opens rssStreams idle chats on p, whose model is model,
// with client, and reports how much p's RSS grew per stream.
func idleStreamRSS(b *testing.B, model *fakeopenai.Server, p *devpilotProc, client *http.Client) {

	// A few complete chats first, so the baseline is a process that has
	// served chats, not one that has just started.
	burst(b, 20, time.Minute, func(ctx context.Context) (streamResult, error) {
		model.Enqueue(fakeopenai.Text("warm up"))
		return p.chat(ctx, client, "hello")
	})

	var perStream, before, open, setup, release float64
	grew := map[string]float64{} // runtime metrics, per stream
	for b.Loop() {
		model.Enqueue(slices.Repeat([]fakeopenai.Response{fakeopenai.Text("released").WithFirstTokenDelay(rssFirstToken)}, rssStreams)...)
		rss0, m0 := rssKiB(b, p.pid()), p.metrics()
		start := time.Now()
		ctx, cancel := context.WithCancel(b.Context())
		var opened, failed atomic.Int64
		var firstErr atomic.Pointer[error]
		var wg sync.WaitGroup
		for range rssStreams {
			wg.Go(func() {
				resp, err := p.postChat(ctx, client, "", "wait for it")
				if err == nil && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
					err = fmt.Errorf("chat: %s", resp.Status)
					resp.Body.Close()
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					failed.Add(1)
					return
				}
				opened.Add(1)
				<-ctx.Done() // hold the stream open, unread, until released
				resp.Body.Close()
			})
		}
		abort := func(format string, args ...any) {
			cancel()
			wg.Wait()
			b.Fatalf(format, args...)
		}
		if !waitFor(func() bool { return opened.Load()+failed.Load() == rssStreams }, time.Minute) {
			abort("%d of %d streams started within a minute", opened.Load(), rssStreams)
		}
		if err := firstErr.Load(); err != nil {
			abort("%d streams failed to start: %v", failed.Load(), *err)
		}
		// Every model call is under way once the fake has handed out every
		// scripted answer; then let the process settle.
		if !waitFor(func() bool { return model.Pending() == 0 }, 15*time.Second) {
			abort("%d model calls not made", model.Pending())
		}
		setup += time.Since(start).Seconds()
		rss1 := settledRSS(b, p.pid())
		m1 := p.metrics()
		perStream += (rss1 - rss0) / rssStreams
		for _, k := range []string{"go_goroutines", "go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes"} {
			grew[k] += (m1[k] - m0[k]) / rssStreams
		}
		before += rss0
		open += rss1

		releaseStart := time.Now()
		cancel()
		wg.Wait()
		// Each hung-up stream winds its turn up (cancelled, stored); wait
		// for every request to be over.
		if !waitFor(func() bool { return p.inFlight() <= 1 }, 30*time.Second) {
			b.Fatalf("streams still in flight 30s after the clients left")
		}
		release += time.Since(releaseStart).Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(perStream/n, "KiB-rss-per-idle-stream")
	// Where it goes, from the Go runtime's own metrics: heap in use includes
	// garbage not collected yet; RSS also counts freed heap not yet returned.
	b.ReportMetric(grew["go_goroutines"]/n, "goroutines-per-idle-stream")
	b.ReportMetric(grew["go_memstats_stack_inuse_bytes"]/n/1024, "KiB-stack-per-idle-stream")
	b.ReportMetric(grew["go_memstats_heap_inuse_bytes"]/n/1024, "KiB-heap-inuse-per-idle-stream")
	b.ReportMetric(grew["go_memstats_heap_alloc_bytes"]/n/1024, "KiB-heap-alloc-per-idle-stream")
	b.ReportMetric(before/n/1024, "MiB-rss-before")
	b.ReportMetric(open/n/1024, "MiB-rss-open")
	b.ReportMetric(setup/n, "s-to-open-all")
	b.ReportMetric(release/n, "s-to-release-all")
	b.ReportMetric(0, "ns/op")
	stopping := time.Now()
	p.stop() // fails the benchmark unless it exits 0 within 30s
	b.ReportMetric(time.Since(stopping).Seconds(), "s-to-stop")
}

// inProcessEnv, when set to 1, makes the benchmarks run devpilot inside the
// benchmark process (run() on a goroutine) instead of as a child, so that
// -cpuprofile, -blockprofile and -mutexprofile see it. Its RSS is then not
// its own: the RSS benchmark skips, and CPU figures include the client and
// the fake.
const inProcessEnv = "DEVPILOT_BENCH_INPROCESS"

// devpilotProc is a running `devpilot run` with an API token: a child
// process, or run() in this process (see inProcessEnv).
type devpilotProc struct {
	b        *testing.B
	cmd      *exec.Cmd // nil in process
	cancel   func()    // in process: ends run()
	base     string
	auth     string
	logs     *childLog
	exited   chan error
	stopOnce sync.Once
}

var raiseNoFileOnce sync.Once

// raiseNoFile lifts the soft limit on open files to the hard one. The Go
// runtime raises it at start-up too, but restores the original limit in the
// processes it starts unless the program calls Setrlimit itself: this way
// the child inherits the raised limit.
func raiseNoFile(b *testing.B) {
	raiseNoFileOnce.Do(func() {
		var l syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			b.Logf("getrlimit: %v", err)
			return
		}
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			b.Logf("setrlimit: %v", err)
		}
	})
}

// buildDevpilot builds the binary into a temporary directory.
func buildDevpilot(b *testing.B) string {
	b.Helper()
	raiseNoFile(b)
	bin := filepath.Join(b.TempDir(), "devpilot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startDevpilot starts `devpilot run` on a fresh database of dialect d with
// its model at modelURL, waits for its listening line and creates a token.
// The process is stopped when the benchmark ends, if not before.
func startDevpilot(b *testing.B, bin, modelURL string, d sqlstore.Dialect, extraEnv ...string) *devpilotProc {
	b.Helper()
	dir := b.TempDir()
	env := append(os.Environ(),
		"DEVPILOT_DATA_DIR="+dir,
		"DEVPILOT_HTTP_ADDR=127.0.0.1:0",
		"DEVPILOT_SECRET_KEY=",
		"DEVPILOT_LOG_FORMAT=text",
		"DEVPILOT_LOG_LEVEL=info",
		"OPENAI_API_KEY=sk-bench",
		"OPENAI_BASE_URL="+modelURL,
		// One user runs every chat of a benchmark, many at once and
		// more than 30 a minute: no caps.
		"DEVPILOT_RATE_LIMIT_REQUESTS=0",
		"DEVPILOT_MAX_TURNS_PER_USER=0",
	)
	env = append(env, extraEnv...)
	if d == sqlstore.DialectSQLite {
		env = append(env, "DEVPILOT_DATABASE_URL=") // the default: sqlite under the data dir
	} else {
		env = append(env, "DEVPILOT_DATABASE_URL="+sqlstoretest.URL(b, d))
	}
	p := &devpilotProc{b: b, logs: newChildLog(), exited: make(chan error, 1)}
	if os.Getenv(inProcessEnv) == "1" {
		vars := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		go func() {
			var err error
			if code := run(ctx, []string{"run"}, func(k string) string { return vars[k] }, io.Discard, p.logs); code != 0 {
				err = fmt.Errorf("exit status %d", code)
			}
			p.exited <- err
		}()
	} else {
		p.cmd = exec.Command(bin, "run")
		p.cmd.Env = env
		p.cmd.Stdout = io.Discard
		p.cmd.Stderr = p.logs // copied by a goroutine of os/exec: never blocks the child
		if err := p.cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() { p.exited <- p.cmd.Wait() }()
	}
	b.Cleanup(p.stop)
	select {
	case p.base = <-p.logs.addr:
	case err := <-p.exited:
		p.exited <- err
		b.Fatalf("devpilot run exited before listening: %v\n%s", err, p.logs.head())
	case <-time.After(30 * time.Second):
		b.Fatalf("devpilot run did not listen within 30s\n%s", p.logs.head())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok := exec.CommandContext(ctx, bin, "token", "create", "--email", "bench@example.com", "--org", "bench")
	tok.Env = env
	out, err := tok.Output()
	if err != nil {
		b.Fatalf("token create: %v %s", err, stderrOf(err))
	}
	p.auth = "Bearer " + strings.TrimSpace(string(out))
	return p
}

func stderrOf(err error) string {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return string(ee.Stderr)
	}
	return ""
}

// pid is the process devpilot runs in.
func (p *devpilotProc) pid() int {
	if p.cmd == nil {
		return os.Getpid()
	}
	return p.cmd.Process.Pid
}

// stop sends SIGTERM and fails the benchmark unless the process exits with
// status 0 within 30s and logged no error (errors of background loops cut
// short by the shutdown, "context canceled", are only logged).
func (p *devpilotProc) stop() {
	p.stopOnce.Do(func() {
		p.logs.stopped()
		if p.cmd == nil {
			p.cancel()
		} else {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case err := <-p.exited:
			if err != nil {
				p.b.Errorf("devpilot run: %v", err)
			}
		case <-time.After(30 * time.Second):
			if p.cmd == nil {
				p.b.Fatalf("devpilot run did not stop within 30s")
			}
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.b.Errorf("devpilot run did not stop within 30s of SIGTERM")
		}
		if n, lines := p.logs.errors(); n > 0 {
			p.b.Errorf("devpilot run logged %d errors, first:\n%s", n, lines)
		}
		for _, line := range p.logs.shutdownNoise() {
			p.b.Logf("logged while stopping: %s", line)
		}
	})
}

// postChat sends a chat in the session (a new one when sessionID is "") and
// returns the response with its headers read.
func (p *devpilotProc) postChat(ctx context.Context, client *http.Client, sessionID, message string) (*http.Response, error) {
	in := map[string]string{"message": message}
	if sessionID != "" {
		in["session_id"] = sessionID
	}
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/api/v1/agent/chat", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", p.auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return client.Do(req)
}

// chat runs one chat in a new session to its done event; first is measured
// from just before the request is sent to the first content event.
func (p *devpilotProc) chat(ctx context.Context, client *http.Client, message string) (streamResult, error) {
	return p.chatIn(ctx, client, "", message)
}

// chatIn is chat in the session (a new one when sessionID is "").
func (p *devpilotProc) chatIn(ctx context.Context, client *http.Client, sessionID, message string) (streamResult, error) {
	start := time.Now()
	resp, err := p.postChat(ctx, client, sessionID, message)
	if err != nil {
		return streamResult{}, err
	}
	headers := time.Since(start)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return streamResult{}, fmt.Errorf("chat: %s %s", resp.Status, b)
	}
	r, err := readChatStream(resp.Body, start)
	r.headers = headers
	return r, err
}

// metrics scrapes /metrics and returns its samples without labels; nil when
// it cannot.
func (p *devpilotProc) metrics() map[string]float64 {
	resp, err := http.Get(p.base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.ContainsAny(name, "#{") {
			continue
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// inFlight is devpilot_http_requests_in_flight (the scrape itself counts);
// -1 when it cannot be read.
func (p *devpilotProc) inFlight() float64 {
	if v, ok := p.metrics()["devpilot_http_requests_in_flight"]; ok {
		return v
	}
	return -1
}

// streamResult is what a client saw of one stream.
type streamResult struct {
	headers   time.Duration // to the response headers
	first     time.Duration // to the first content with text
	contents  int           // content events (or chunks with text)
	sessionID string        // done's (devpilot only)
}

// readChatStream reads a devpilot chat stream to its done event, which must
// say finish_reason stop.
func readChatStream(body io.Reader, start time.Time) (streamResult, error) {
	var res streamResult
	br := bufio.NewReaderSize(body, 64<<10)
	event := ""
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return res, fmt.Errorf("chat stream ended without done: %w", err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(line) == 0:
			event = ""
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			data := line[len("data: "):]
			switch event {
			case "content":
				if res.contents == 0 {
					var c struct {
						Delta string `json:"delta"`
					}
					if err := json.Unmarshal(data, &c); err != nil || c.Delta == "" {
						return res, fmt.Errorf("content event without a delta: %s", data)
					}
					res.first = time.Since(start)
				}
				res.contents++
			case "error":
				return res, fmt.Errorf("error event: %s", data)
			case "done":
				var d struct {
					FinishReason string `json:"finish_reason"`
					SessionID    string `json:"session_id"`
				}
				if err := json.Unmarshal(data, &d); err != nil || d.FinishReason != "stop" {
					return res, fmt.Errorf("done: %s", data)
				}
				res.sessionID = d.SessionID
				return res, nil
			}
		}
	}
}

// completion streams the chat completion body asks for straight from the
// fake at modelURL and reads it to data: [DONE], timing it as chat does.
func completion(ctx context.Context, client *http.Client, modelURL string, body []byte) (streamResult, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, modelURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return streamResult{}, err
	}
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return streamResult{}, err
	}
	res := streamResult{headers: time.Since(start)}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return streamResult{}, fmt.Errorf("completion: %s %s", resp.Status, b)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return res, fmt.Errorf("completion stream ended without [DONE]: %w", err)
		}
		data, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			return res, nil
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			return res, fmt.Errorf("chunk %s: %w", data, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			if res.contents == 0 {
				res.first = time.Since(start)
			}
			res.contents++
		}
	}
}

// burst runs n streams with do, all released at once, and fails the
// benchmark if any fails or they take longer than limit.
func burst(b *testing.B, n int, limit time.Duration, do func(context.Context) (streamResult, error)) []streamResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), limit)
	defer cancel()
	out := make([]streamResult, n)
	errs := make([]error, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			out[i], errs[i] = do(ctx)
		})
	}
	close(gate)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("%d streams: %v", n, firstLine(err.Error()))
	}
	return out
}

// steady runs n clients, the i-th starting i*cycle/n after the first, each
// running each streams one after the other with do; it fails the benchmark
// if any fails or all take longer than a minute.
func steady(b *testing.B, n, each int, cycle time.Duration, do func(context.Context) (streamResult, error)) []streamResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	out := make([]streamResult, n*each)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * cycle / time.Duration(n))
			for k := range each {
				if out[i*each+k], errs[i] = do(ctx); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("%d clients: %v", n, firstLine(err.Error()))
	}
	return out
}

// h2cClient is an HTTP/2 client without TLS (prior knowledge), which opens
// a connection per 250 concurrent streams (the server's limit), and never
// uses a proxy.
func h2cClient() *http.Client {
	tr := &http.Transport{
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression: true,
		Protocols:          new(http.Protocols),
	}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// benchClient is an HTTP/1.1 client that keeps enough connections to every
// host for streams concurrent streams, and never uses a proxy.
func benchClient(streams int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: streams + 16,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// childLog is the child's stderr: it hands out the address of the listening
// line and counts error records, keeping a few, without ever blocking.
type childLog struct {
	mu       sync.Mutex
	partial  []byte
	first    strings.Builder // the first lines, for diagnostics
	errN     int
	errs     strings.Builder
	stopping bool // SIGTERM sent
	noise    []string
	addr     chan string
	sent     bool
}

func newChildLog() *childLog { return &childLog{addr: make(chan string, 1)} }

func (l *childLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if l.first.Len() < 16<<10 {
			l.first.WriteString(line + "\n")
		}
		if !l.sent {
			if m := listenLine.FindStringSubmatch(line); m != nil {
				l.sent = true
				l.addr <- m[1]
			}
		}
		switch {
		case !strings.Contains(line, "level=ERROR"):
		case l.stopping && strings.Contains(line, "context canceled"):
			// A background loop cut short by the shutdown.
			if len(l.noise) < 5 {
				l.noise = append(l.noise, line)
			}
		default:
			l.errN++
			if l.errN <= 5 {
				l.errs.WriteString(line + "\n")
			}
		}
	}
	l.partial = slices.Clip(l.partial)
	return len(p), nil
}

func (l *childLog) head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first.String()
}

func (l *childLog) stopped() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopping = true
}

func (l *childLog) shutdownNoise() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.noise)
}

func (l *childLog) errors() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errN, l.errs.String()
}

// cpuSeconds is the user and system CPU time process pid has used.
func cpuSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command, which is in parentheses and may hold spaces:
	// state is field 3, utime 14 and stime 15.
	rest := string(data[bytes.LastIndexByte(data, ')')+2:])
	f := strings.Fields(rest)
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	return (utime + stime) / clockTicks
}

// settledRSS reads VmRSS until two readings 100 ms apart are within 1% of
// each other (at most for 3s), and returns the last.
func settledRSS(b *testing.B, pid int) float64 {
	b.Helper()
	prev := rssKiB(b, pid)
	for range 30 {
		time.Sleep(100 * time.Millisecond)
		cur := rssKiB(b, pid)
		if math.Abs(cur-prev) <= prev/100 {
			return cur
		}
		prev = cur
	}
	return prev
}

// waitFor polls cond every 10 ms until it holds or limit passes.
func waitFor(cond func() bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// percentile is the nearest-rank q-th percentile of ds.
func percentile(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(math.Ceil(float64(q)/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
