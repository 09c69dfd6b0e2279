package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/command"
)

// pmcp doctor: a list of checks of one server, each a PASS, FAIL or SKIP
// line, with what to do under each FAIL. The checks reach the server the
// way the client commands do (the SDK's client, the same token store), so
// what doctor says is what they meet.

// doctorAbout is doctor's help text.
const doctorAbout = `Check the way to one MCP server, step by step, and say what to fix.
For a URL: DNS, TCP, TLS (certificate, expiry, host name), the HTTP
status of an initialize, the Host/Origin check, which protocol eras the
server speaks, and on a 401 its protected-resource and authorization-
server metadata, the registration options, the token stored for it by
pmcp login (missing, expired, wrong audience) and the clock skew.
For -- COMMAND ARGS: the child starts, answers initialize in time and
writes only JSON-RPC on stdout. Exit status 1 when a check fails.`

// clockSkewLimit is the difference between the server's Date and the
// local clock doctor calls a failure: tokens' exp, nbf and iat are judged
// by clocks, and verifiers allow about a minute of leeway.
const clockSkewLimit = time.Minute

// certExpiryWarning: a certificate that expires sooner fails the TLS
// check, so the renewal happens before clients start failing.
const certExpiryWarning = 7 * 24 * time.Hour

type doctorArgs struct {
	headers http.Header
	timeout time.Duration
	auth    authArgs
}

func doctorVerb() (*verb, *doctorArgs) {
	v := newVerb("doctor", "pmcp doctor [flags] (URL | -- COMMAND ARGS...)", doctorAbout)
	a := &doctorArgs{headers: http.Header{}, timeout: 10 * time.Second}
	v.fs.Func("header", "'Name: value' added to every HTTP request (repeatable)", headerFlag(a.headers))
	v.fs.Func("H", "short for --header", headerFlag(a.headers))
	v.fs.Func("timeout", "bound each check (default 10s)", func(d string) (err error) {
		if a.timeout, err = time.ParseDuration(d); err != nil || a.timeout <= 0 {
			return fmt.Errorf("want a positive duration such as 30s, got %q", d)
		}
		return nil
	})
	a.auth.registerStore(v.fs)
	return v, a
}

func doctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	v, a := doctorVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	r := &checks{w: stdout}
	switch {
	case tail != nil && len(pos) == 0 && len(tail) > 0:
		doctorStdio(ctx, a, tail, r)
	case tail == nil && len(pos) == 1:
		u, err := url.Parse(pos[0])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return v.usageError(stderr, fmt.Errorf("want an http:// or https:// URL, got %q", pos[0]))
		}
		doctorHTTP(ctx, a, u, r)
	default:
		return v.usageError(stderr, errors.New("give one server: a URL, or -- COMMAND ARGS..."))
	}
	if r.failed {
		return exitError
	}
	return exitOK
}

// checks prints the result lines.
type checks struct {
	w      io.Writer
	failed bool
}

func (c *checks) line(state, name, detail, fix string) {
	fmt.Fprintf(c.w, "%s  %-18s %s\n", state, name, sanitize(detail))
	if fix != "" {
		fmt.Fprintf(c.w, "      fix: %s\n", sanitize(fix))
	}
}

func (c *checks) pass(name, format string, args ...any) {
	c.line("PASS", name, fmt.Sprintf(format, args...), "")
}

func (c *checks) fail(name, detail, fix string) {
	c.failed = true
	c.line("FAIL", name, detail, fix)
}

func (c *checks) skip(why string, names ...string) {
	for _, n := range names {
		c.line("SKIP", n, why, "")
	}
}

// The names of the HTTP checks after the network ones, skipped together
// when the server cannot be reached.
var (
	eraChecks  = []string{"http", "host/origin", "legacy era", "modern era"}
	authChecks = []string{"authorization", "resource metadata", "server metadata", "registration", "token", "token use"}
)

func doctorHTTP(ctx context.Context, a *doctorArgs, u *url.URL, r *checks) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(host, port)
	rest := append(append(append([]string{}, eraChecks...), authChecks...), "clock")

	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if net.ParseIP(host) != nil {
		r.pass("dns", "%s is an address: nothing to resolve", host)
	} else if addrs, err := net.DefaultResolver.LookupHost(cctx, host); err != nil {
		r.fail("dns", fmt.Sprintf("cannot resolve %s: %v", host, err), "check the host name in the URL (and the VPN or /etc/hosts entry it needs, if any)")
		r.skip("the host name does not resolve", append([]string{"tcp", "tls"}, rest...)...)
		return
	} else {
		r.pass("dns", "%s is %s", host, strings.Join(addrs, ", "))
	}

	conn, err := (&net.Dialer{}).DialContext(cctx, "tcp", addr)
	if err != nil {
		r.fail("tcp", fmt.Sprintf("cannot connect to %s: %v", addr, err),
			"is the server running and listening on port "+port+"? (a server listening on 127.0.0.1 is reachable from this machine only; pmcp serve --http ADDR)")
		r.skip("nothing to talk to", append([]string{"tls"}, rest...)...)
		return
	}
	_ = conn.Close()
	r.pass("tcp", "connected to %s", addr)

	if u.Scheme != "https" {
		r.skip("http:// has no TLS (use https:// for a server beyond this machine)", "tls")
	} else if !checkTLS(cctx, host, addr, r) {
		r.skip("no TLS connection", rest...)
		return
	}

	tr := &dateRecorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	defer tr.base.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	endpoint := u.String()
	challenge := checkEras(ctx, a, hc, endpoint, r)
	if challenge == nil {
		r.skip("the server asked for no token", authChecks...)
	} else {
		prm := checkAuthorization(ctx, a, hc, endpoint, challenge, r)
		checkTokenUse(ctx, a, hc, endpoint, checkToken(ctx, a, endpoint, prm, r), r)
	}
	checkClock(tr.date(), r)
}

// checkTLS reports the handshake and the server's certificate; it
// returns whether the handshake succeeded.
func checkTLS(ctx context.Context, host, addr string, r *checks) bool {
	d := tls.Dialer{Config: &tls.Config{ServerName: host}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var he x509.HostnameError
		var ua x509.UnknownAuthorityError
		var ci x509.CertificateInvalidError
		var rh tls.RecordHeaderError
		fix := "check the server's TLS configuration (certificate chain, protocol versions)"
		switch {
		case errors.As(err, &he):
			fix = fmt.Sprintf("the certificate is for %s, not %s: connect by a name it lists, or give the server a certificate for %s", certNames(he.Certificate), host, host)
		case errors.As(err, &ua):
			fix = "the certificate is not signed by an authority this machine trusts (self-signed?): use a certificate from a public CA, or add its CA to the system's trust store"
		case errors.As(err, &rh):
			fix = "the server answers in plain HTTP on this port: use http:// (or put TLS in front of it)"
		case errors.As(err, &ci) && ci.Reason == x509.Expired:
			fix = "the certificate has expired or is not valid yet: renew it (and check this machine's clock)"
		}
		r.fail("tls", fmt.Sprintf("handshake with %s: %v", addr, err), fix)
		return false
	}
	defer conn.Close()
	cs := conn.(*tls.Conn).ConnectionState()
	leaf := cs.PeerCertificates[0]
	left := time.Until(leaf.NotAfter)
	if left < certExpiryWarning {
		r.fail("tls", fmt.Sprintf("the certificate for %s expires %s (in %s)", certNames(leaf), leaf.NotAfter.Format(time.RFC3339), left.Round(time.Hour)),
			"renew the certificate before clients start refusing it")
		return true
	}
	r.pass("tls", "%s, certificate for %s valid until %s", tls.VersionName(cs.Version), certNames(leaf), leaf.NotAfter.Format("2006-01-02"))
	return true
}

func certNames(c *x509.Certificate) string {
	if c == nil {
		return "?"
	}
	if len(c.DNSNames) > 0 {
		return strings.Join(c.DNSNames, ", ")
	}
	return c.Subject.CommonName
}

// checkEras connects in each era with the SDK's client. It returns the
// refusal of a legacy initialize when it asks for a token (a 401, or a
// 403 with a challenge), else nil.
func checkEras(ctx context.Context, a *doctorArgs, hc *http.Client, endpoint string, r *checks) *pmcp.HTTPStatusError {
	type attempt struct {
		s   *pmcp.ClientSession
		err error
	}
	try := func(era pmcp.Era) attempt {
		c := pmcp.NewClient(pmcp.ClientOptions{Name: "pmcp-doctor", Version: "1.0.0", Era: era,
			CallTimeout: a.timeout, ProbeTimeout: a.timeout, Logger: slog.New(slog.DiscardHandler)})
		cctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		s, err := c.ConnectHTTP(cctx, endpoint, pmcp.HTTPClientOptions{Header: a.headers, HTTPClient: hc})
		return attempt{s, err}
	}
	legacy := try(pmcp.EraLegacy)
	var hse *pmcp.HTTPStatusError
	if errors.As(legacy.err, &hse) {
		switch hse.StatusCode {
		case http.StatusUnauthorized:
			r.pass("http", "POST initialize: 401 Unauthorized: the server wants a token (see authorization)")
			r.skip("not reached without a token", "host/origin", "legacy era", "modern era")
			return hse
		case http.StatusForbidden:
			if code, _ := hse.Challenge(); code != "" {
				r.pass("http", "POST initialize: %v", hse)
				r.skip("not reached without a token", "host/origin", "legacy era", "modern era")
				return nil
			}
			r.fail("http", "POST initialize: "+hse.Error(), "")
			r.fail("host/origin", fmt.Sprintf("the server refused Host %q (or the Origin): its DNS-rebinding protection accepts loopback names only unless told otherwise", hostOf(endpoint)),
				"allow the name on the server: pmcp serve --allow-host NAME, or StreamableHTTPOptions.AllowedHosts (Origin: AllowedOrigins) in Go; or connect by a name it accepts")
			r.skip("the request was refused", "legacy era", "modern era")
			return nil
		case http.StatusNotFound:
			r.fail("http", "POST initialize: "+hse.Error(), "nothing serves MCP at this path: check the URL's path (pmcp serve and most servers use /mcp)")
		case http.StatusMethodNotAllowed:
			r.fail("http", "POST initialize: "+hse.Error(), "this URL does not take POST: an SSE-only server of the 2024-11-05 transport? use its Streamable HTTP endpoint")
		default:
			r.fail("http", "POST initialize: "+hse.Error(), "see the server's log for why it refused")
		}
		r.skip("the server refused the request", "host/origin", "legacy era", "modern era")
		return nil
	}
	modern := try(pmcp.EraModern)
	if legacy.err != nil && modern.err != nil {
		r.fail("http", "initialize: "+errText(legacy.err), "is this an MCP endpoint? the server answered neither era")
		r.skip("the server answered no initialize", "host/origin")
		r.fail("legacy era", errText(legacy.err), "")
		r.fail("modern era", errText(modern.err), "")
		return nil
	}
	r.pass("http", "POST initialize: 200 OK")
	r.pass("host/origin", "Host %q accepted", hostOf(endpoint))
	for _, at := range []struct {
		name string
		attempt
	}{{"legacy era", legacy}, {"modern era", modern}} {
		if at.err != nil {
			r.skip("not spoken ("+errText(at.err)+"); the other era is", at.name)
			continue
		}
		info := at.s.ServerInfo()
		name := "?"
		if info != nil {
			name = info.Name + " " + info.Version
		}
		r.pass(at.name, "protocol version %s, server %s", at.s.ProtocolVersion(), name)
		_ = at.s.Close()
	}
	return nil
}

// dateRecorder keeps the Date header of the first response that has one.
type dateRecorder struct {
	base *http.Transport
	mu   sync.Mutex
	d    string
}

func (t *dateRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		if d := resp.Header.Get("Date"); d != "" {
			t.mu.Lock()
			if t.d == "" {
				t.d = d
			}
			t.mu.Unlock()
		}
	}
	return resp, err
}

func (t *dateRecorder) date() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d
}

func checkClock(date string, r *checks) {
	if date == "" {
		r.skip("the server sent no Date header", "clock")
		return
	}
	d, err := http.ParseTime(date)
	if err != nil {
		r.skip(fmt.Sprintf("the server's Date %q does not parse", date), "clock")
		return
	}
	skew := time.Since(d).Round(time.Second)
	if skew.Abs() > clockSkewLimit {
		way := "ahead of"
		if skew < 0 {
			way = "behind"
		}
		r.fail("clock", fmt.Sprintf("this machine's clock is %s %s the server's (Date: %s)", skew.Abs(), way, date),
			"synchronise the clock (NTP): tokens' exp, nbf and iat are judged by it")
		return
	}
	r.pass("clock", "within %s of the server's Date", clockSkewLimit)
}

// doctorStdio runs the child as the client commands do.
func doctorStdio(ctx context.Context, a *doctorArgs, argv []string, r *checks) {
	errs := newKeptStderr()
	tr, err := command.New(exec.Command(argv[0], argv[1:]...), command.Options{Stderr: errs, MaxStderrBytes: maxKeptStderr})
	if err != nil {
		r.fail("start", err.Error(), "")
		r.skip("no child", "initialize", "stdout")
		return
	}
	stream, err := tr.Start()
	if err != nil {
		r.fail("start", fmt.Sprintf("%s: %v", argv[0], err), "check the command: its path (hosts start it without your shell's PATH: give an absolute path) and that it is executable")
		r.skip("no child", "initialize", "stdout")
		return
	}
	r.pass("start", "%s started", argv[0])
	c := pmcp.NewClient(pmcp.ClientOptions{Name: "pmcp-doctor", Version: "1.0.0", CallTimeout: a.timeout, ProbeTimeout: a.timeout,
		Logger: slog.New(slog.DiscardHandler)})
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	stop := context.AfterFunc(cctx, func() { _ = tr.Kill() })
	s, err := c.Connect(cctx, stream)
	timedOut := !stop()
	if err != nil || timedOut {
		if s != nil {
			_ = s.Close()
		}
		_ = tr.Kill()
		<-tr.Done()
		detail := "no answer to initialize within " + a.timeout.String() + " (--timeout)"
		if err != nil && !timedOut {
			detail = errText(childExit(err, tr))
		}
		if hint := stdoutNoise(tr); hint != "" {
			detail += "; " + hint
		}
		if e := errs.String(); e != "" {
			detail += "; its stderr ends: " + e
		}
		r.fail("initialize", detail, "run the command by hand: a stdio server reads JSON-RPC lines on stdin and answers initialize on stdout")
		r.skip("no session", "stdout")
		return
	}
	defer func() {
		_ = s.Close()
		_ = tr.Kill()
		<-tr.Done()
	}()
	info := s.ServerInfo()
	name := "?"
	if info != nil {
		name = info.Name + " " + info.Version
	}
	r.pass("initialize", "%s era, protocol version %s, server %s", s.Era(), s.ProtocolVersion(), name)
	if line := tr.FirstInvalidLine(); line != "" {
		r.fail("stdout", fmt.Sprintf("the server wrote a line on stdout that is not JSON-RPC: %q", line),
			"stdout carries only protocol messages: a stdio server logs to stderr (in Go: log.SetOutput(os.Stderr), slog.NewTextHandler(os.Stderr, nil))")
		return
	}
	r.pass("stdout", "only JSON-RPC")
}
