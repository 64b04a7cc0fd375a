package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
)

// logPoll is the interval between two polls of a followed log: the
// configured one, never below cloud.MinLogPoll.
func (s *Server) logPoll() time.Duration {
	return max(s.cfg.LogPoll, cloud.MinLogPoll)
}

// logFollowFor is how long one follow lasts before its end event.
func (s *Server) logFollowFor() time.Duration {
	if s.cfg.LogFollowFor <= 0 {
		return cloud.DefaultLogFollowFor
	}
	return s.cfg.LogFollowFor
}

// followInput reads a follow's query (account_id, cluster, filter) and its
// Last-Event-ID header (or ?after=).
func followInput(r *http.Request) cloud.FollowInput {
	q := r.URL.Query()
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = q.Get("after")
	}
	return cloud.FollowInput{ServiceRef: cloud.ServiceRef{AccountID: q.Get("account_id"), Cluster: q.Get("cluster")},
		Filter: q.Get("filter"), After: after}
}

func (s *Server) serviceLogStream(w http.ResponseWriter, r *http.Request) error {
	in := followInput(r)
	in.Service = pathParam(r, "service")
	return s.followLogs(w, r, in)
}

func (s *Server) functionLogStream(w http.ResponseWriter, r *http.Request) error {
	in := followInput(r)
	in.Function = pathParam(r, "name")
	return s.followLogs(w, r, in)
}

// followLogs streams a log as Server-Sent Events: each log event as a "log"
// event (its id FollowEventID's, its data {id, timestamp, message, stream}),
// polling the provider every logPoll, the first time at once. A provider
// error is an "error" event ({code, detail}) and ends the stream; after
// logFollowFor an "end" event ({reason, after}) asks the client to
// reconnect with the last id. The stream ends too when the client leaves or
// the server stops. Errors before the stream starts (validation, a missing
// service, the first poll's) are the answer.
func (s *Server) followLogs(w http.ResponseWriter, r *http.Request, in cloud.FollowInput) error {
	f, err := s.d.Cloud.FollowLogs(r.Context(), in)
	if err != nil {
		return err
	}
	ctx, cancel := s.untilStopping(r.Context())
	defer cancel()
	// The first poll answers before the stream starts: a missing service or
	// log group, or a refusal, is a problem response.
	events, err := f.Poll(ctx)
	if err != nil {
		return err
	}
	stream := s.openSSE(w, pingEvery)
	defer stream.close()
	last := in.After
	deadline := time.NewTimer(s.logFollowFor())
	defer deadline.Stop()
	tick := time.NewTicker(s.logPoll())
	defer tick.Stop()
	for first := true; ; first = false {
		if !first {
			events, err = f.Poll(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			pub := ports.Public(err)
			b, _ := json.Marshal(map[string]string{"code": string(pub.Kind), "detail": pub.Message})
			_ = stream.named("", "error", b)
			return nil
		}
		for _, e := range events {
			id := cloud.FollowEventID(e)
			b, err := json.Marshal(map[string]any{"id": id, "timestamp": e.Timestamp.UTC(), "message": e.Message, "stream": e.Stream})
			if err != nil {
				return nil
			}
			if stream.named(id, "log", b) != nil {
				return nil
			}
			last = id
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			b, _ := json.Marshal(map[string]string{"reason": "this stream lasts " + s.logFollowFor().String() + "; reconnect with Last-Event-ID to go on", "after": last})
			_ = stream.named(last, "end", b)
			return nil
		case <-tick.C:
		}
	}
}

// named writes one event whose id is a string ("" sends no id line), in one
// write and one flush.
func (s *sseStream) named(id, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		b := s.buf[:0]
		if id != "" {
			b = append(b, "id: "...)
			b = append(b, id...)
			b = append(b, '\n')
		}
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, "\ndata: "...)
		b = append(b, data...)
		b = append(b, "\n\n"...)
		_, s.err = s.w.Write(b)
		if cap(b) <= maxSSEBuf {
			s.buf = b
		}
	}
	return s.flushLocked()
}
