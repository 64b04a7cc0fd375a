package queue

import (
	"context"
	"log/slog"
)

// QuietRiver returns logger with its informational records demoted to debug:
// the logger a River client gets. River reports at info level what an
// operator does not act on (its producers' job counts every few seconds, the
// client starting and stopping, each job error it retries, which the use
// cases log themselves); its warnings and errors pass unchanged.
func QuietRiver(logger *slog.Logger) *slog.Logger {
	return slog.New(demoteInfo{logger.Handler()})
}

// demoteInfo is a slog.Handler that hands records to h with info (and any
// level between info and warn) lowered to debug.
type demoteInfo struct{ h slog.Handler }

func demote(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// Enabled reports whether h takes records of level l once demoted.
func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, demote(l))
}

// Handle hands r to h, demoted.
func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.h.Handle(ctx, r)
}

// WithAttrs returns the demoting handler of h with attrs.
func (d demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteInfo{d.h.WithAttrs(attrs)}
}

// WithGroup returns the demoting handler of h in group name.
func (d demoteInfo) WithGroup(name string) slog.Handler {
	return demoteInfo{d.h.WithGroup(name)}
}
