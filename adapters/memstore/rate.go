package memstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.RateStore = (*Store)(nil)

// rateWindow is a key's count in its current window.
type rateWindow struct {
	start time.Time
	n     int64
}

// TakeRate counts one request for key in now's window, starting the count
// again in a later window; counts are kept outside transactions.
func (s *Store) TakeRate(_ context.Context, key string, window time.Duration, limit int, now time.Time) (bool, time.Duration, error) {
	if err := ports.CheckRateTake(key, window, limit); err != nil {
		return false, 0, err
	}
	start, _ := ports.RateWindow(window, now)
	defer s.lock()()
	if s.rates == nil {
		s.rates = map[string]rateWindow{}
	}
	w := s.rates[key]
	switch {
	case start.After(w.start):
		w = rateWindow{start: start, n: 1}
	default:
		w.n++
	}
	s.rates[key] = w
	return w.n <= int64(limit), max(w.start.Add(window).Sub(now), 0), nil
}
