package anthropic

import "time"

// SetBackoff sets c's retry pacing, so tests of retries do not wait.
func SetBackoff(c *Client, base, most time.Duration) { c.backoffBase, c.backoffMax = base, most }
