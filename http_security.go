package pmcp

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// isLoopbackName reports whether host (without port or brackets) names the
// loopback interface the way the Origin check accepts it.
func isLoopbackName(host string) bool {
	return strings.EqualFold(host, "localhost") || host == "127.0.0.1" || host == "::1"
}

// hostHeader is a Host header value split by parseHostHeader.
type hostHeader struct {
	host string     // as written, IPv6 literals in brackets
	name string     // host without brackets
	ipv6 bool       // host is a bracketed IPv6 literal
	addr netip.Addr // the IPv6 literal
}

// parseHostHeader splits a Host header value (RFC 9110 §7.2: host, then
// an optional ":" port) and validates it strictly: the host is a bracketed
// IPv6 literal without zone or a name of letters, digits, '-', '.' and
// '_'; a port, when the colon is there, is 1 to 65535 in decimal digits.
// Anything else, such as "localhost:80.evil.example", is refused.
func parseHostHeader(v string) (hostHeader, bool) {
	var hh hostHeader
	host, port, hasPort := v, "", false
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return hh, false
		}
		host = v[:end+1]
		if rest := v[end+1:]; rest != "" {
			if rest[0] != ':' {
				return hh, false
			}
			port, hasPort = rest[1:], true
		}
		a, err := netip.ParseAddr(host[1:end])
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return hh, false
		}
		hh = hostHeader{host: host, name: host[1:end], ipv6: true, addr: a}
	} else {
		if i := strings.IndexByte(v, ':'); i >= 0 {
			host, port, hasPort = v[:i], v[i+1:], true
		}
		if host == "" {
			return hh, false
		}
		for i := 0; i < len(host); i++ {
			c := host[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
				return hh, false
			}
		}
		hh = hostHeader{host: host, name: host}
	}
	if hasPort && !validPort(port) {
		return hh, false
	}
	return hh, true
}

// validPort reports whether p is a TCP port number, 1 to 65535, in
// decimal digits.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

// isLoopback reports whether a parsed Host names this machine's loopback
// interface: localhost, an address of 127.0.0.0/8, or [::1].
func (hh hostHeader) isLoopback() bool {
	if hh.ipv6 {
		return hh.addr == netip.IPv6Loopback()
	}
	if strings.EqualFold(hh.name, "localhost") {
		return true
	}
	if c := hh.name[0]; c < '0' || c > '9' {
		return false // not an IPv4 address (and no error value to make)
	}
	a, err := netip.ParseAddr(hh.name)
	return err == nil && a.Is4() && a.IsLoopback()
}

// hostAllowed is the DNS-rebinding check on the Host header. It looks
// only at the Host value, never at the interface the connection arrived
// on: a server bound to 0.0.0.0 is reached through loopback names too.
func (h *StreamableHTTPHandler) hostAllowed(r *http.Request) bool {
	if h.opts.DisableHostCheck {
		return true
	}
	hh, ok := parseHostHeader(r.Host)
	if !ok {
		return false
	}
	if hh.isLoopback() {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if strings.EqualFold(a, r.Host) || strings.EqualFold(a, hh.host) || strings.EqualFold(a, hh.name) {
			return true
		}
	}
	return false
}

// originAllowed checks a present Origin header: loopback origins and the
// configured ones pass.
func (h *StreamableHTTPHandler) originAllowed(origin string) bool {
	for _, a := range h.opts.AllowedOrigins {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// corsRequestHeaders are the request headers a browser client may send.
var corsRequestHeaders = []string{
	"accept", "authorization", "content-type", "last-event-id",
	"mcp-method", "mcp-name", "mcp-protocol-version", "mcp-session-id",
}

func (h *StreamableHTTPHandler) corsHeaders(w http.ResponseWriter, origin string) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", origin)
	hd.Add("Vary", "Origin")
	hd.Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
}

// preflight answers a CORS preflight request.
func (h *StreamableHTTPHandler) preflight(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	var allowed []string
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			ok := strings.HasPrefix(name, "mcp-param-") && isToken(name)
			for _, c := range corsRequestHeaders {
				ok = ok || c == name
			}
			if ok {
				allowed = append(allowed, name)
			}
		}
	}
	if len(allowed) > 0 {
		hd.Set("Access-Control-Allow-Headers", strings.Join(allowed, ", "))
	}
	hd.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}
