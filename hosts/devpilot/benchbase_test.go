package main

import (
	"os"
	"testing"
)

// baseBinEnv names the binary of an earlier commit (built by `make bench`
// with scripts/build-base.sh) that the throughput benchmarks run side by
// side with the current code, in the same run, so that their figures are
// compared on the same machine at the same time.
const baseBinEnv = "DEVPILOT_BENCH_BASE_BIN"

// benchBinary is a devpilot binary a benchmark runs: the current code, or
// the base commit's.
type benchBinary struct {
	name string // "current" or "base"
	path string
}

// benchBinaries returns the current code's binary and, when baseBinEnv names
// one, the base commit's after it.
func benchBinaries(b *testing.B) []benchBinary {
	b.Helper()
	bins := []benchBinary{{name: "current", path: buildDevpilot(b)}}
	if p := os.Getenv(baseBinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("%s: %v", baseBinEnv, err)
		}
		bins = append(bins, benchBinary{name: "base", path: p})
	}
	return bins
}
