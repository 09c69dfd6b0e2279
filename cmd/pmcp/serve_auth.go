package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/oauth"
)

// authDiscoveryTimeout bounds finding the issuer's keys at startup.
const authDiscoveryTimeout = 15 * time.Second

// serveSecurity holds the authorization and Host flags of `pmcp serve`.
type serveSecurity struct {
	issuer, audience, scopes string
	allowHosts               stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (s *serveSecurity) register(fs *flag.FlagSet) {
	fs.StringVar(&s.issuer, "auth-issuer", "", "require OAuth access tokens (JWT) from this authorization server; its keys are found through its metadata. https, or http on a loopback address only")
	fs.StringVar(&s.audience, "auth-audience", "", "with --auth-issuer: this server's canonical URI (https://host/mcp), the audience tokens must be minted for")
	fs.StringVar(&s.scopes, "auth-scopes", "", "with --auth-issuer: comma-separated scopes every request needs (also listed in the protected resource metadata)")
	fs.Var(&s.allowHosts, "allow-host", "accept this Host header value besides the loopback ones (NAME or NAME:PORT; repeatable)")
}

// check reports a usage error in the flags.
func (s *serveSecurity) check() error {
	if s.issuer == "" && (s.audience != "" || s.scopes != "") {
		return fmt.Errorf("--auth-audience and --auth-scopes need --auth-issuer")
	}
	if s.issuer != "" && s.audience == "" {
		return fmt.Errorf("--auth-issuer needs --auth-audience (this server's canonical URI)")
	}
	return nil
}

func (s *serveSecurity) scopeList() []string {
	var out []string
	for _, sc := range strings.Split(s.scopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" {
			out = append(out, sc)
		}
	}
	return out
}

// apply configures the handler options and mounts the protected resource
// metadata on mux. Without --auth-issuer it only sets AllowedHosts and
// warns when addr is not a loopback address.
func (s *serveSecurity) apply(ctx context.Context, addr string, mux *http.ServeMux, hopts *pmcp.StreamableHTTPOptions, stderr io.Writer) error {
	hopts.AllowedHosts = append(hopts.AllowedHosts, s.allowHosts...)
	if s.issuer == "" {
		if checkLoopback(addr) != nil {
			fmt.Fprintf(stderr, "pmcp: warning: listening on %s without --auth-issuer: anyone who can reach this address can use the server\n", addr)
		}
		return nil
	}
	resource, err := oauth.Canonical(s.audience)
	if err != nil {
		return fmt.Errorf("--auth-audience: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, authDiscoveryTimeout)
	defer cancel()
	md, err := oauth.DiscoverAuthServer(dctx, nil, s.issuer, oauth.DiscoverOptions{})
	if err == nil && md.JWKSURI == "" {
		err = fmt.Errorf("%w: %s has no jwks_uri", oauth.ErrMetadata, md.URL)
	}
	if err != nil {
		return fmt.Errorf("--auth-issuer: %w", err)
	}
	verifier, err := auth.NewJWTVerifier(auth.JWTOptions{JWKSURL: md.JWKSURI, Issuer: s.issuer, Audience: resource})
	if err != nil {
		return err
	}
	scopes := s.scopeList()
	authn, err := auth.NewAuthenticator(auth.Options{Verifier: verifier, Resource: resource, Scopes: scopes})
	if err != nil {
		return err
	}
	// The path-inserted and the root well-known URLs.
	if _, err := auth.MountProtectedResourceMetadata(mux, &oauth.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{s.issuer}, ScopesSupported: scopes,
	}); err != nil {
		return err
	}
	hopts.Authenticate = authn.Authenticate
	hopts.InsufficientScope = authn.InsufficientScope
	// Clients reach the server by its canonical name.
	if u, err := url.Parse(resource); err == nil && !oauth.IsLoopbackHost(u.Hostname()) {
		hopts.AllowedHosts = append(hopts.AllowedHosts, u.Host)
	}
	return nil
}
