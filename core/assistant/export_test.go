package assistant

// OnEventsJoined makes s call fn with the size of the open batch of stream
// event writes each time a turn's flush joins it; fn must not block.
func OnEventsJoined(s *Service, fn func(n int)) { s.events.OnJoined(fn) }
