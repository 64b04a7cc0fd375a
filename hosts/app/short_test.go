package app_test

import "testing"

// skipShort skips a test that starts devpilot (an end-to-end or browser
// test) under `go test -short`, which make test-short runs: the unit and
// contract tests of the inner loop. Every starter of a stack calls it, so
// no such test needs a line of its own.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts devpilot: an end-to-end test, skipped with -short (make test runs it)")
	}
}
