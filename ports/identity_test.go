package ports_test

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestAPITokenStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	for _, tt := range []struct {
		name string
		tok  ports.APIToken
		want ports.TokenStatus
	}{
		{"no expiry", ports.APIToken{}, ports.TokenActive},
		{"expires later", ports.APIToken{ExpiresAt: at(time.Nanosecond)}, ports.TokenActive},
		{"expires now", ports.APIToken{ExpiresAt: at(0)}, ports.TokenExpired},
		{"expired", ports.APIToken{ExpiresAt: at(-time.Hour)}, ports.TokenExpired},
		{"revoked", ports.APIToken{RevokedAt: at(-time.Hour)}, ports.TokenRevoked},
		{"revoked in the future still revoked", ports.APIToken{RevokedAt: at(time.Hour)}, ports.TokenRevoked},
		{"revoked and expired", ports.APIToken{RevokedAt: at(-2 * time.Hour), ExpiresAt: at(-time.Hour)}, ports.TokenRevoked},
	} {
		if got := tt.tok.Status(now); got != tt.want {
			t.Errorf("%s: Status = %q, want %q", tt.name, got, tt.want)
		}
	}
}
