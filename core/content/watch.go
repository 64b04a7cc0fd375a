package content

import (
	"context"
	"slices"

	"github.com/devpilot/devpilot/core/internal/watch"
	"github.com/devpilot/devpilot/ports"
)

// StateTag identifies a state of an item for a progress stream (its SSE
// event id): the time of the item's last change, in microseconds. Tags are
// not ordered across replicas' clocks; a state is sent when its tag
// differs from the one a client saw.
func StateTag(it ports.ContentItem) int64 { return it.UpdatedAt.UnixMicro() }

// WatchItem announces the states of a content item of the caller's
// organisation as they commit, on any replica: it calls emit with the item
// now, then with each new state (read every Config.WatchPoll: a draft
// written, a status changed, an edit) until ctx ends. An emit error (the
// client is gone) ends it quietly. Errors: Item's, also when the item is
// deleted while watched; the store's errors other than ctx's end.
func (s *Service) WatchItem(ctx context.Context, id string, emit func(ports.ContentItem) error) error {
	return watch.Poll(ctx, s.cfg.WatchPoll, func(ctx context.Context) (ports.ContentItem, error) { return s.Item(ctx, id) }, itemChanged, emit)
}

// itemChanged reports whether b is another state of an item than a.
func itemChanged(a, b ports.ContentItem) bool {
	return !a.UpdatedAt.Equal(b.UpdatedAt) || a.Version != b.Version || a.Status != b.Status ||
		a.Title != b.Title || a.Body != b.Body || (a.Error == nil) != (b.Error == nil) || !slices.Equal(a.Checks, b.Checks)
}
