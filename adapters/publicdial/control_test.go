package publicdial_test

import (
	"errors"
	"net"
	"testing"

	"github.com/devpilot/devpilot/adapters/publicdial"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// The dialer's Control refuses every non-public address it is about to
// connect to, whatever resolved it, and lets a public one through.
func TestControlRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	check := publicdial.Control(false)
	for _, a := range fixture.NonPublicAddrs {
		if err := check("tcp", net.JoinHostPort(a, "443"), nil); !errors.Is(err, publicdial.ErrPrivate) {
			t.Errorf("Control(%s) = %v, want refused", a, err)
		}
	}
	for _, a := range []string{"93.184.216.34", "2606:4700::1111"} {
		if err := check("tcp", net.JoinHostPort(a, "443"), nil); err != nil {
			t.Errorf("Control(%s) = %v, want allowed", a, err)
		}
	}
	if err := publicdial.Control(true)("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("allowed private: %v", err)
	}
}
