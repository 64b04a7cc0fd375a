package github

import "time"

// SetNow replaces the clock rate-limit waits are measured with.
func SetNow(c *Client, now func() time.Time) { c.now = now }
