package bedrock

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// NewWithoutBackoff is New with retries that do not wait, for tests.
func NewWithoutBackoff(ctx context.Context, cfg Config) (*Client, error) {
	return newClient(ctx, cfg, retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil }))
}
