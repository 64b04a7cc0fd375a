// Package storetest holds contract suites: each TestX runs every method of a
// group of store ports against an implementation, so every adapter of those
// ports (SQLite, PostgreSQL, fakes) is held to the same behaviour.
//
// The suites never assume an empty store: they use fresh ids and names, so
// the stores may share a database with other tests.
package storetest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// base is the time the suites' records are created around. Times keep
// sub-millisecond digits, which stores may drop; a non-UTC zone, which
// stores must turn into UTC.
var base = time.Date(2030, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("UTC+5:30", 5*3600+1800))

// newID returns a random UUID string.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// ms is how a stored time must read back: in UTC, at least to the millisecond.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ms(*t)
	return &v
}

func ptr[T any](v T) *T { return &v }

// checkEqual fails the test when got and want differ.
func checkEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// checkUTC fails the test unless every time is in UTC (not merely at offset 0).
func checkUTC(t *testing.T, what string, times ...*time.Time) {
	t.Helper()
	for _, v := range times {
		if v != nil && v.Location() != time.UTC {
			t.Errorf("%s: time %v is in %v, want UTC", what, v, v.Location())
		}
	}
}

// oneWinner fails the test unless exactly one of errs (from race) is nil and
// the others are loser's kind; it returns the winner's index, -1 when none
// won.
func oneWinner(t *testing.T, what string, errs []error, loser error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("%s %d and %d both succeeded", what, winner, i)
		case !errors.Is(err, loser):
			t.Errorf("%s %d: %v, want nil or %s", what, i, err, ports.KindOf(loser))
		}
	}
	if winner < 0 {
		t.Errorf("no concurrent %s succeeded", what)
	}
	return winner
}

// race runs fn n times at once, released together, and returns the errors.
func race(n int, fn func(i int) error) []error {
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// seedOwner stores a fresh org and one of its users, the owner of the
// records a suite stores.
func seedOwner(t *testing.T, ids identityStores) ports.Owner {
	t.Helper()
	return seedColleague(t, ids, mustCreateOrg(t, ids, newOrg()).ID)
}

// seedColleague stores another user of the org.
func seedColleague(t *testing.T, ids identityStores, orgID string) ports.Owner {
	t.Helper()
	u := mustCreateUser(t, ids, newUser(orgID))
	return ports.Owner{OrgID: orgID, UserID: u.ID}
}

// suiteCase is one named subtest of a contract suite over stores S.
type suiteCase[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

// runSuite runs every case as a parallel subtest, each on stores from
// newStores.
func runSuite[S any](t *testing.T, newStores func(*testing.T) S, cases []suiteCase[S]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStores(t))
		})
	}
}
