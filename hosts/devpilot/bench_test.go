package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

var listenLine = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// BenchmarkStartup starts the real binary with `devpilot run` on a fresh
// data directory each iteration and reports the time from exec to the first
// /readyz 200, and the idle RSS once ready.
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "devpilot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var total time.Duration
	var rss float64
	for b.Loop() {
		d, kib := startOnce(b, bin)
		total += d
		rss += kib
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
	b.ReportMetric(rss/float64(b.N)/1024, "MiB-idle-rss")
	b.ReportMetric(0, "ns/op")
}

func startOnce(b *testing.B, bin string) (time.Duration, float64) {
	b.Helper()
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run")
	cmd.Env = append(os.Environ(), "DEVPILOT_DATA_DIR="+dir, "DEVPILOT_HTTP_ADDR=127.0.0.1:0", "DEVPILOT_SECRET_KEY=", "DEVPILOT_SANDBOX=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	base := ""
	sc := bufio.NewScanner(stderr)
	for base == "" && sc.Scan() {
		if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		b.Fatalf("no listening line: %v", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			b.Fatal("not ready within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	ready := time.Since(start)
	return ready, rssKiB(b, cmd.Process.Pid)
}

func rssKiB(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkMe measures authenticated GET /api/v1/me through `devpilot run`
// in-process over loopback, with parallel keep-alive clients, on each
// database.
func BenchmarkMe(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			h := harness{t: b, env: map[string]string{
				"DEVPILOT_DATABASE_URL": sqlstoretest.URL(b, d),
				"DEVPILOT_DATA_DIR":     b.TempDir(),
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				"DEVPILOT_SANDBOX":      "0",
			}}
			base, _, stop := h.start()
			defer stop()
			code, token, errOut := h.cli("token", "create", "--email", "bench@example.com", "--org", "bench")
			if code != 0 {
				b.Fatalf("token create: %s", errOut)
			}
			auth := "Bearer " + strings.TrimSpace(token)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.SetParallelism(8)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me", nil)
					req.Header.Set("Authorization", auth)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
