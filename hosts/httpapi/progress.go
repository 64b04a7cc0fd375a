package httpapi

import "context"

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
