package scm

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestStampNumbersSeveralEntries(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := ports.WebhookDelivery{ID: "d1", ReceivedAt: at}
	one := []ports.SCMActivity{{Summary: "a"}}
	stamp(d, one)
	if one[0].ID != "delivery:d1" || one[0].Source != "webhook" || one[0].DeliveryID != "d1" || !one[0].At.Equal(at) {
		t.Errorf("one entry: %+v", one[0])
	}
	several := []ports.SCMActivity{{Summary: "a"}, {Summary: "b"}}
	stamp(d, several)
	if several[0].ID != "delivery:d1:1" || several[1].ID != "delivery:d1:2" {
		t.Errorf("several entries: %+v", several)
	}
}
