package ports

import (
	"net/netip"
	"strings"
)

// nonPublic are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose registries and older reserved blocks) that devpilot never
// calls on a user's behalf, besides what netip classifies as loopback,
// private, link-local, multicast or unspecified. Ranges that embed or reach
// an IPv4 address through a translator or a tunnel (IPv4-compatible,
// NAT64, 6to4, Teredo) are refused whole: what they reach is not checked.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and the limited broadcast 255.255.255.255
		"::/96",           // unspecified, loopback and IPv4-compatible (::a.b.c.d)
		"::ffff:0:0:0/96", // IPv4-translated
		"64:ff9b::/96",    // NAT64
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard-only
		"2001::/32",       // Teredo
		"2001:2::/48",     // benchmarking
		"2001:10::/28",    // ORCHID
		"2001:20::/28",    // ORCHIDv2
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// PublicAddr reports whether addr is a public unicast address that devpilot
// may call on a user's behalf (a publishing target): not loopback,
// private, link-local, multicast, unspecified, broadcast, reserved, nor in
// a range that translates or tunnels to IPv4 (see nonPublic). An IPv4
// address mapped into IPv6 (::ffff:a.b.c.d) is judged as the IPv4 address;
// an address with a zone is never public.
func PublicAddr(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// localNames are host names that name the machine itself or its local
// network on common systems (/etc/hosts, mDNS, cloud-internal zones);
// localSuffixes are the zones of such names.
var (
	localNames = map[string]bool{
		"localhost": true, "localdomain": true, "localhost.localdomain": true,
		"ip6-localhost": true, "ip6-loopback": true, "ip6-localnet": true, "ip6-mcastprefix": true,
		"ip6-allnodes": true, "ip6-allrouters": true, "ip6-allhosts": true,
	}
	localSuffixes = []string{".localhost", ".localdomain", ".local", ".internal", ".arpa"}
)

// CheckPublicHost returns why host (a URL's Hostname(): an IPv6 literal
// without its brackets) cannot be the host of a URL devpilot calls on a
// user's behalf, or "" when it can. It must be a plain ASCII host name
// (letters, digits, '-', '_', dots; an internationalised name in its
// xn-- form), a canonical dotted-quad IPv4 address or an IPv6 address
// without a zone; a name whose last label is a number (127.1, 2130706433,
// 0x7f.1, 0177.0.0.1, 0) is an IPv4 address in another spelling, which is
// refused, as are names of the machine itself (localhost,
// localhost.localdomain, ip6-localhost, *.local, ...) and addresses that
// are not PublicAddr. A name's addresses are checked when it is called.
func CheckPublicHost(host string) string {
	const (
		private   = "must not name a local or private address"
		plainName = "must be a plain ASCII host name (an internationalised name in its xn-- form) or an IP address"
	)
	if host == "" {
		return "must name a host"
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return plainName
		}
	}
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(host)
		switch {
		case err != nil || !addr.Is6() || addr.Zone() != "":
			return plainName
		case !PublicAddr(addr):
			return private
		}
		return ""
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if len(name) > 253 {
		return plainName
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return plainName
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		addr, err := netip.ParseAddr(host)
		switch {
		case err != nil || !addr.Is4() || addr.String() != host:
			return "must be a host name or an IPv4 address written as four decimal numbers (a.b.c.d)"
		case !PublicAddr(addr):
			return private
		}
		return ""
	}
	if localNames[name] {
		return private
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) {
			return private
		}
	}
	return ""
}

// numericLabel reports whether l reads as a number to an IPv4 parser
// (inet_aton, WHATWG URL): decimal, octal or 0x hexadecimal digits.
func numericLabel(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}
