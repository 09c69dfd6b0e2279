package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/internal/resourceuri"
	"github.com/gopmcp/pmcp/internal/wwwauth"
	"github.com/gopmcp/pmcp/oauthclient"
)

// The authorization checks of pmcp doctor: what a client meets after a
// 401, in the order it meets it.

// checkAuthorization follows a 401 (or 403 with a challenge) to the
// protected-resource metadata, the authorization server's metadata and
// its registration options. It returns the protected-resource metadata
// when it was found.
func checkAuthorization(ctx context.Context, a *doctorArgs, hc *http.Client, endpoint string, hse *pmcp.HTTPStatusError, r *checks) *auth.ProtectedResourceMetadata {
	status := hse.StatusCode
	chs := wwwauth.Parse([]string{hse.WWWAuthenticate})
	if len(chs) == 0 {
		r.fail("authorization", fmt.Sprintf("HTTP %d without a WWW-Authenticate challenge", status),
			"answer 401 with WWW-Authenticate: Bearer resource_metadata=\"<metadata URL>\" (RFC 9728 §5.1) so clients can find the authorization server")
	} else {
		r.pass("authorization", "HTTP %d, WWW-Authenticate: %s", status, hse.WWWAuthenticate)
	}
	prmURL := wwwauth.Param(chs, "resource_metadata")
	if prmURL == "" {
		var err error
		if prmURL, err = auth.MetadataURL(endpoint); err != nil {
			r.fail("resource metadata", err.Error(), "")
			r.skip("no protected-resource metadata", "server metadata", "registration")
			return nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var prm auth.ProtectedResourceMetadata
	if err := readJSON(cctx, hc, prmURL, &prm); err != nil {
		r.fail("resource metadata", err.Error(),
			"publish the protected-resource metadata (RFC 9728) at "+prmURL+" and name it in the 401's resource_metadata (in Go: auth.MountProtectedResourceMetadata)")
		r.skip("no protected-resource metadata", "server metadata", "registration")
		return nil
	}
	switch {
	case !resourceuri.Same(prm.Resource, endpoint):
		r.fail("resource metadata", fmt.Sprintf("%s names resource %q, not this server %q: clients refuse it (RFC 9728 §3.3)", prmURL, prm.Resource, endpoint),
			"set its resource to the URL clients use for the server")
		r.skip("no usable protected-resource metadata", "server metadata", "registration")
		return nil
	case len(prm.AuthorizationServers) == 0:
		r.fail("resource metadata", prmURL+" lists no authorization_servers", "list the issuer URL of the authorization server")
		r.skip("no authorization server named", "server metadata", "registration")
		return nil
	}
	r.pass("resource metadata", "%s: resource %s, authorization server %s", prmURL, prm.Resource, strings.Join(prm.AuthorizationServers, ", "))

	issuer := prm.AuthorizationServers[0]
	md, err := auth.DiscoverIssuer(cctx, hc, issuer)
	if err != nil {
		r.fail("server metadata", errText(err),
			"the issuer must publish RFC 8414 (/.well-known/oauth-authorization-server) or OpenID Connect metadata whose issuer is exactly "+issuer)
		r.skip("no authorization-server metadata", "registration")
		return &prm
	}
	r.pass("server metadata", "%s: issuer %s", md.URL, md.Issuer)

	// What a client can register with (RFC 7591 dynamic registration,
	// client ID metadata documents), read from the document just found.
	var reg struct {
		RegistrationEndpoint string `json:"registration_endpoint"`
		CIMD                 bool   `json:"client_id_metadata_document_supported"`
	}
	if err := readJSON(cctx, hc, md.URL, &reg); err != nil {
		r.fail("registration", err.Error(), "")
		return &prm
	}
	switch {
	case reg.RegistrationEndpoint != "" && reg.CIMD:
		r.pass("registration", "dynamic registration at %s; client ID metadata documents supported (--client-metadata-url)", reg.RegistrationEndpoint)
	case reg.RegistrationEndpoint != "":
		r.pass("registration", "dynamic registration at %s", reg.RegistrationEndpoint)
	case reg.CIMD:
		r.pass("registration", "client ID metadata documents supported: pmcp login --client-metadata-url URL")
	default:
		r.fail("registration", "neither dynamic registration nor client ID metadata documents",
			"register a client with the authorization server and sign in with pmcp login --url "+endpoint+" --client-id ID")
	}
	return &prm
}

// checkToken judges the token pmcp login stored for endpoint, a server
// that asked for one.
func checkToken(ctx context.Context, a *doctorArgs, endpoint string, prm *auth.ProtectedResourceMetadata, r *checks) {
	login := "pmcp login --url " + endpoint
	st, err := a.auth.store()
	if err != nil {
		r.fail("token", err.Error(), "")
		return
	}
	keys, err := st.Keys(ctx)
	if err != nil {
		r.fail("token", "token store: "+err.Error(), "")
		return
	}
	var key oauthclient.TokenKey
	var creds *oauthclient.Credentials
	for _, k := range keys {
		if !sameResource(k.Resource, endpoint) {
			continue
		}
		if c, err := st.Load(ctx, k); err == nil && c != nil && c.AccessToken != "" {
			key, creds = k, c
			break
		}
	}
	if creds == nil {
		r.fail("token", "no token stored for this server", login)
		return
	}
	if prm != nil && !slices.Contains(prm.AuthorizationServers, key.Issuer) {
		r.fail("token", fmt.Sprintf("stored from %s, but the server now trusts %s", key.Issuer, strings.Join(prm.AuthorizationServers, ", ")), login)
		return
	}
	exp := creds.Expiry
	var aud []string
	if tok, err := jwt.ParseSigned(creds.AccessToken.Reveal(), tokenAlgs); err == nil {
		var cl jwt.Claims
		if tok.UnsafeClaimsWithoutVerification(&cl) == nil {
			aud = cl.Audience
			if exp.IsZero() && cl.Expiry != nil {
				exp = cl.Expiry.Time()
			}
		}
	}
	if len(aud) > 0 && !slices.ContainsFunc(aud, func(s string) bool { return resourceuri.Same(s, endpoint) }) {
		r.fail("token", fmt.Sprintf("the stored token's audience is %s, not this server: the server refuses it", strings.Join(aud, ", ")),
			"pmcp logout --url "+endpoint+" && "+login)
		return
	}
	if !exp.IsZero() && time.Now().After(exp) {
		if creds.RefreshToken != "" {
			r.pass("token", "expired %s ago; a refresh token is stored, the next command renews it", time.Since(exp).Round(time.Second))
			return
		}
		r.fail("token", fmt.Sprintf("the stored token expired %s ago (%s) and there is no refresh token", time.Since(exp).Round(time.Second), exp.Format(time.RFC3339)), login)
		return
	}
	what := "opaque (its audience is the server's to judge)"
	if len(aud) > 0 {
		what = "audience " + strings.Join(aud, ", ")
	}
	left := "no expiry known"
	if !exp.IsZero() {
		left = "expires in " + time.Until(exp).Round(time.Second).String()
	}
	r.pass("token", "stored from %s, %s, %s", key.Issuer, what, left)
}

// tokenAlgs are the signature algorithms doctor reads JWT access tokens
// in (it only reads their claims; the server verifies them).
var tokenAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}
