package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
)

// untilStopping returns a context of ctx that also ends when the server
// starts stopping: a stream that lasts as long as its client ends then, and
// the client reconnects, to another replica.
func (s *Server) untilStopping(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// serveProgress serves a progress stream: watch calls emit with a record's
// state now and with each new one; each is sent as an SSE event name, its
// id tag(state) and its data the JSON of data(state), except a first state
// whose tag is the request's Last-Event-ID (the client saw it). It streams
// until the client leaves or the server stops; watch's error before the
// stream starts is the answer.
func serveProgress[T any](s *Server, w http.ResponseWriter, r *http.Request, name string,
	watch func(ctx context.Context, emit func(T) error) error, tag func(T) int64, data func(T) any) error {
	last, err := lastEventID(r)
	if err != nil {
		return err
	}
	ctx, cancel := s.untilStopping(r.Context())
	defer cancel()
	var stream *sseStream
	defer func() {
		if stream != nil {
			stream.close()
		}
	}()
	err = watch(ctx, func(state T) error {
		first := stream == nil
		if first {
			stream = s.openSSE(w, pingEvery)
		}
		id := tag(state)
		if first && id == last {
			return nil // the state the client saw; the headers are sent
		}
		b, err := json.Marshal(data(state))
		if err != nil {
			return err
		}
		return stream.event(id, name, b)
	})
	if stream != nil {
		return nil // streamed: a late error cannot be a problem response
	}
	return err
}
