package scm

// OnWebhookJoined makes s call fn with the size of the open batch of
// webhook deliveries each time one joins it; fn must not block.
func OnWebhookJoined(s *Service, fn func(n int)) {
	s.ingest.OnJoined(fn)
}
