package ports_test

import (
	"net/netip"
	"net/url"
	"testing"

	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for _, s := range fixture.NonPublicAddrs {
		if ports.PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = true, want false", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "198.17.255.255", "198.20.0.1", "192.0.1.1", "223.255.255.1", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8"} {
		if !ports.PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = false, want true", s)
		}
	}
	if ports.PublicAddr(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestCheckPublicHost(t *testing.T) {
	t.Parallel()
	for _, host := range fixture.LocalHostSpellings {
		u, err := url.Parse("http://" + host + "/x")
		if err != nil {
			continue // refused by any URL parser: fine
		}
		if reason := ports.CheckPublicHost(u.Hostname()); reason == "" {
			t.Errorf("CheckPublicHost(%q) accepted %s", u.Hostname(), host)
		}
	}
	for _, host := range []string{"example.com", "hooks.example.com.", "Blog.Example.COM", "xn--bcher-kva.example", "my_host.example.net",
		"93.184.216.34", "[2606:4700::1111]", "0x7f.example.com", "1e100.net", "127.0.0.1.nip.io"} {
		u, err := url.Parse("http://" + host + "/x")
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if reason := ports.CheckPublicHost(u.Hostname()); reason != "" {
			t.Errorf("CheckPublicHost(%q) = %q, want accepted", u.Hostname(), reason)
		}
	}
	for _, host := range []string{"", "a..b", "a b", "exa$mple.com", "bücher.example", "[::1%eth0]", "1.2.3.4.5", "example.123"} {
		if reason := ports.CheckPublicHost(host); reason == "" {
			t.Errorf("CheckPublicHost(%q) accepted", host)
		}
	}
}
