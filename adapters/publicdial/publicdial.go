// Package publicdial dials only public addresses: the dialer devpilot calls
// addresses an organisation gives it with (publishing targets, MCP servers),
// so that such an address cannot reach devpilot's own network (loopback,
// private and link-local ranges, cloud metadata, the other special-purpose
// ranges ports.PublicAddr refuses).
package publicdial

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"

	"github.com/devpilot/devpilot/ports"
)

// Resolver looks up the IP addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrPrivate is the refusal of an address that is not public.
var ErrPrivate = errors.New("the address is local or private")

// Control is a net.Dialer's last word: unless allowPrivate, it refuses a
// socket about to connect to an address that is not ports.PublicAddr, so the
// check sees the very address connected to, however it was found.
func Control(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ports.PublicAddr(ap.Addr()) {
			return ErrPrivate
		}
		return nil
	}
}

// DialContext resolves a host name with r and dials its addresses in turn
// with d (whose Control should be Control(allowPrivate)). Unless
// allowPrivate, a name with any address that is not public is refused
// before a socket is made.
func DialContext(d *net.Dialer, r Resolver, allowPrivate bool) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		addrs := []netip.Addr{}
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = append(addrs, a)
		} else if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if !allowPrivate && !ports.PublicAddr(a) {
				return nil, &net.OpError{Op: "dial", Net: network, Addr: &net.TCPAddr{IP: a.AsSlice()}, Err: ErrPrivate}
			}
		}
		first := error(&net.AddrError{Err: "no address", Addr: host})
		for i, a := range addrs {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			if i == 0 {
				first = err
			}
		}
		return nil, first
	}
}
