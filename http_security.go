package pmcp

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// isLoopbackName reports whether host (without port or brackets) names the
// loopback interface the way DNS-rebinding protection accepts it.
func isLoopbackName(host string) bool {
	return strings.EqualFold(host, "localhost") || host == "127.0.0.1" || host == "::1"
}

// splitHost returns the host part of a Host header value, without port and
// brackets.
func splitHost(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// connectedOnLoopback reports whether the request arrived on a loopback
// address of this host.
func connectedOnLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return false
	}
	return ap.Addr().Unmap().IsLoopback()
}

// hostAllowed is the DNS-rebinding check on the Host header.
func (h *StreamableHTTPHandler) hostAllowed(r *http.Request) bool {
	if h.opts.DisableHostCheck {
		return true
	}
	loopback := connectedOnLoopback(r)
	if len(h.opts.AllowedHosts) == 0 && !loopback {
		return true
	}
	host := splitHost(r.Host)
	if loopback && isLoopbackName(host) {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if strings.EqualFold(a, r.Host) || strings.EqualFold(a, host) {
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
