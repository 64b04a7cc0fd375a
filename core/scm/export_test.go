package scm

import "github.com/devpilot/devpilot/ports"

// OnWebhookJoined makes s call fn with the size of the open batch of
// webhook deliveries each time one joins it; fn must not block.
func OnWebhookJoined(s *Service, fn func(n int)) {
	s.ingest.OnJoined(fn)
}

// OnWebhookBuffered makes s call fn with how many bytes of a webhook body it
// holds in memory each time that grows; fn must not block.
func OnWebhookBuffered(s *Service, fn func(n int)) { s.buffered = fn }

// EntriesOf is the activity entries an event records, without ids, times or
// source.
func EntriesOf(e ports.SCMWebhookEvent) ([]ports.SCMActivity, error) { return entriesOf(e) }
